package algo

import "time"

// Real TTLs next to fake instants.
//
// The differential tests drive the scripts with made-up instants but read the TTLs the
// scripts set on a real Redis, which counts them down in real time. A TTL at the 2 ms
// floor can therefore run out before the test reads it back: on a loaded machine Redis
// may be descheduled for longer than that between two commands, or even inside one
// (Redis 7.0's PEXPIRE reads the clock twice and deletes a key whose TTL already passed),
// and the PTTL then says the key is gone. farExpiry keeps every key far from expiry
// while still letting the test check the exact TTL each script asked for.

// farTTL is added to every TTL a script built by farExpiry sets: about 11.6 days, far
// more than any test runs, so no key of such a script expires in real time.
const farTTL = 1_000_000_000 * time.Millisecond

// farShadow replaces the global redis table, for the rest of the script, by one whose call
// adds farTTL to the milliseconds of every PEXPIRE and SET ... PX. The initializer still sees the global
// redis (the local's scope starts after its declaration).
const farShadow = "local redis = setmetatable({call = function(cmd, ...) " +
	"if cmd == 'PEXPIRE' then local k, ms = ...; return redis.call(cmd, k, tonumber(ms) + 1000000000) end " +
	"if cmd == 'SET' then local a = {...}; if a[3] == 'PX' then a[4] = tonumber(a[4]) + 1000000000 end return redis.call(cmd, unpack(a)) end " +
	"return redis.call(cmd, ...) end}, {__index = redis})\n"

// farExpiry returns the source of a script that does what src does, except that every TTL
// it sets is farTTL longer.
func farExpiry(src string) string { return farShadow + src }

// scriptTTL returns the TTL a farExpiry script asked for, less the real time since, given
// the key's PTTL, which must be ≥ 0 (a key with a TTL). The result is negative when the
// TTL asked for has run out in real time: the key, far from expiry, is still there.
func scriptTTL(pttl time.Duration) time.Duration { return pttl - farTTL }
