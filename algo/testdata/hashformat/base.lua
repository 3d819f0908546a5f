-- Base: the helpers every script of the module starts with (the algorithms' prelude, the
-- semaphore, the composite of ApplyAll, the penalty), so that reading the time, the
-- padding of a client clock and the expiry floor are written once.
--
-- In a Redis 7 function library (luawire.Library) everything before the script's
-- "per call" line runs once, when the library loads: it only defines constants and
-- functions. The per-call part starts with `redis = api()`.
--
-- api returns the server's redis table at call time: a library captures, while it loads,
-- a table without redis.call, so the helpers never keep the table they were loaded with.
local function api() return redis end
-- KEYS and ARGV of the current call: the globals of a script; a library's function sets
-- them from its arguments before anything else runs.
local KEYS, ARGV = KEYS, ARGV
-- redis is the table the scripts and the helpers call: set per call.
local redis = redis

local MAX_MICROS = 1e15 -- algo.MaxMicros: bounds every wait; 1e15 µs = never

-- num formats a number for Redis: %.17g round-trips every double and prints integers
-- below 1e17 without an exponent. Most numbers the scripts store are whole µs or counts,
-- for which %d prints the same digits at well under half the cost of printf's
-- floating-point path (measured in Redis: about 0.1 µs against 0.26 µs a call); -0 keeps
-- its sign.
local function num(x)
  if x % 1 == 0 and x > -9e15 and x < 9e15 and x ~= 0 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- pad (µs) is added to every TTL ttl_ms computes: the tolerance of a client clock, sent
-- with it in ARGV[2] ("now pad", luawire.PaddedNow), so that Redis, expiring keys on its
-- own clock, keeps a state as long as a client clock up to pad behind it still needs it
-- (distributed/clock.go). It is 0 with the server's TIME. Set by read_now.
local pad = 0

-- read_now decodes ARGV[2] of a call into now, in µs since the Unix epoch: "" reads the
-- server's TIME; "now" is a client's time; "now pad" is a client's time and the TTL
-- padding, which it keeps in pad.
local function read_now(arg)
  pad = 0
  if arg == '' then
    -- Redis 3.2–4 replicate scripts verbatim unless told otherwise, and refuse writes
    -- after TIME; Redis 5+ replicate effects already (the call is a no-op there).
    if redis.replicate_commands then redis.replicate_commands() end
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local now = tonumber(arg)
  if now then return now end
  local a, b = string.match(arg, '^(%-?%d+) (%d+)$')
  pad = tonumber(b)
  return tonumber(a)
end

-- ttl_ms is the PEXPIRE of a key whose state is fresh again in us µs: us + pad, clamped
-- to MAX_MICROS, in whole ms rounded up, at least 2 ms, not 1: up to Redis 7.0, PEXPIRE
-- reads the clock twice (when = now + ms, then deletes the key if when ≤ now), so
-- "PEXPIRE k 1" deletes k whenever a millisecond ticks in between (and "PEXPIRE k 0"
-- always does). A key outliving its state by 1 ms more is harmless: the state is fresh by
-- then. The division is exact: integers below 2^53 divided and rounded stay integers.
local function ttl_ms(us)
  us = us + pad
  if us > MAX_MICROS then us = MAX_MICROS end
  local ms = math.ceil(us / 1000)
  if ms < 2 then ms = 2 end
  return ms
end
