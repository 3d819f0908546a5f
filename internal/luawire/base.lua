-- Base: the helpers every script of the module starts with (the algorithms' prelude, the
-- semaphore, the composite of ApplyAll, the penalty, Reset), so that reading the time, the
-- padding of a client clock, the expiry floor and the compact state's GET and SET are
-- written once.
--
-- A script of the module is this file followed by its own (see luawire.Composed, the one
-- statement of the rule): its top level only defines local constants and functions, and
-- its last statement is `return serve(call)`, call() answering one call. Run as a script
-- (EVAL, EVALSHA), serve answers the call at once; loaded as a Redis 7 function library
-- (luawire.Library), the script runs once, when the library loads, and serve hands call
-- to the library, which registers it: the helpers are made once rather than on every call.
--
-- in_library: this code runs in a Redis 7 function library, whose helpers and upvalues
-- outlive a call, rather than in a plain script, which runs all of it again on every
-- call. A plain script's KEYS is a table on every call; a library's is nil while it
-- loads (luawire.Library declares it), set by serve on each call.
local in_library = KEYS == nil

-- api returns the server's redis table at call time: a library captures, while it loads,
-- a table without redis.call, so the helpers never keep the table they were loaded with.
-- It also names the library functions of the hot paths (string.format, struct.pack and
-- struct.unpack), which a library cannot reach while it loads: each global name costs a
-- lookup through the globals table's metatable, an upvalue next to nothing. A library
-- keeps both from its first call (server_redis: Redis gives a function the same redis
-- table on every call), so serve starts each call with `redis = server_redis or api()`.
-- has_keepttl: SET has KEEPTTL (Redis ≥ 6; REDIS_VERSION_NUM exists from 7.0), see
-- put_state_kept.
local sformat, spack, sunpack, ssub, server_redis, has_keepttl
local function api()
  sformat, spack, sunpack, ssub = string.format, struct.pack, struct.unpack, string.sub
  has_keepttl = redis.REDIS_VERSION_NUM ~= nil
  if in_library then server_redis = redis end
  return redis
end

-- KEYS and ARGV of the current call: the globals of a script; serve sets them from the
-- arguments of a library's function before anything else runs.
local KEYS, ARGV = KEYS, ARGV
-- redis is the table the scripts and the helpers call: set per call, by serve.
local redis = redis

local MAX_MICROS = 1e15 -- algo.MaxMicros: bounds every wait; 1e15 µs = never

-- Parsing a number (tonumber: strtod) costs Redis about 1k instructions, a tenth of
-- what the Lua of a fixed window's grant costs. So the hot path avoids it: the commonest
-- arguments ("1", "0") are compared (Lua strings are interned: == compares pointers), and
-- in a library the values of the last few configuration arguments (config_num) and the
-- seconds of TIME (read_now) are kept from one call to the next.
--
-- config_num is tonumber(s) for a configuration argument (a limit, a window, a rate):
-- few distinct strings, the same on most calls. In a library it remembers up to 64 of
-- them (then starts afresh, so a client sending many never grows it unbounded); in a plain
-- script, where a memo would be a table and a closure made on every call, it is tonumber.
-- (tonumber, like string and math, is named at call time only: a library cannot reach
-- it while it loads.) The hot paths read config_nums[s] or config_num(s): a hit then
-- costs a table lookup, not a call (config_nums is always empty in a plain script).
local config_num, config_nums
if in_library then
  local nums_n = 0
  config_nums = {} -- argument string -> its number
  config_num = function(s)
    local x = config_nums[s]
    if x then return x end
    x = tonumber(s)
    if x then
      if nums_n >= 64 then config_nums, nums_n = {}, 0 end
      config_nums[s], nums_n = x, nums_n + 1
    end
    return x
  end
else
  config_num, config_nums = tonumber, {}
end

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
-- server_time: now is the server's TIME (ARGV[2] ""). Set by read_now.
local server_time = false
-- time_s, time_n: the seconds of the last TIME read, as replied and as a number (read_now;
-- a library's upvalues outlive a call, so most calls of the same second parse only the µs).
local time_s, time_n = nil, 0

-- shared_now: the server's TIME (µs) that the calls of one multi function of a library
-- (luawire.RateLibrary) share, read once for all of them (see serve); nil otherwise.
local shared_now = nil

-- read_now decodes ARGV[2] of a call into now, in µs since the Unix epoch: "" reads the
-- server's TIME; "now" is a client's time; "now pad" is a client's time and the TTL
-- padding, which it keeps in pad.
local function read_now(arg)
  pad = 0
  server_time = arg == ''
  if arg == '' then
    if shared_now then return shared_now end
    -- Redis 3.2–4 replicate scripts verbatim unless told otherwise, and refuse writes
    -- after TIME; Redis 5+ replicate effects already (the call is a no-op there).
    -- A library runs on Redis 7 only, and Redis 7 has REDIS_VERSION_NUM: no call there.
    if not in_library and redis.replicate_commands and not redis.REDIS_VERSION_NUM then
      redis.replicate_commands()
    end
    local t = redis.call('TIME')
    local s = t[1]
    if s ~= time_s then time_s, time_n = s, tonumber(s) end
    -- Arithmetic converts the µs string as tonumber does (both strtod), at a third of the
    -- cost: tonumber is a global lookup and a C call that converts twice.
    return time_n * 1000000 + t[2]
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
  local ms = us / 1000
  local f = ms % 1 -- ms - floor(ms), exact: math.ceil without a lookup and a C call
  if f > 0 then ms = ms - f + 1 end
  if not (ms >= 2) then ms = 2 end -- NaN and -inf too (f is NaN)
  return ms
end

-- Compact state. Each rate algorithm keeps one string per key: a layout tag (one byte, its
-- letter, so that two algorithms meeting on a key never read each other's state) and its
-- fields packed with struct.pack as little-endian doubles ("<B" then "d" each): bit-exact
-- round trips and no number printed or parsed on the hot path. It is read with one GET
-- and written with one SET ... PX, where the previous format took HMGET, HSET and
-- PEXPIRE (docs/distributed.md, "State on Redis"). struct is a global of Redis's Lua at
-- call time (a function library cannot reach it while it loads): the hot paths call it as
-- spack and sunpack (see api).
--
-- Every packed state ends with STATE_END, four bytes (a NUL, "rk", and the format's
-- version, 1) that no twin packs: a state is read only when its length is its layout's
-- plus these four, its first byte is its tag and it ends with them, so an application's
-- string that happens to have the length and first byte of a state is other data (a
-- WRONGTYPE error, store.ErrKeyUnavailable), never a decision that overwrites it.
-- put_state and put_state_kept append it; a twin that SETs a state itself appends it too.
local STATE_END = '\0rk\1'

-- get_state reads key: its value when it is size bytes long and starts with tag; nil for
-- no key; true for a key of the previous format, a hash, whose fields the caller reads
-- with HMGET (that HMGET raises WRONGTYPE for any other type, as before). A string of
-- another length or tag is other data (an application's, or another algorithm's state on
-- a key shared by mistake): a WRONGTYPE error too, rather than a fresh state that would
-- overwrite it. GET of a hash is an error, hence pcall: reading old keys costs nothing on
-- keys already converted.
--
-- The twins' hot paths read their state inline, which spares a call: v =
-- redis.pcall('GET', key), and when #v == size + 4 (a table, pcall's error reply, has
-- length 0) and v ends with STATE_END the fields with sunpack and a check of the tag
-- (size is the layout's length, without STATE_END); otherwise, or with another tag,
-- not_state(v) answers as get_state: nil for no key, true for a hash, else an error.
local function not_state(v)
  if not v then return nil end
  if type(v) == 'string' then
    error({err = 'WRONGTYPE Operation against a key holding a string that is not a state of this algorithm'})
  end
  return true
end
local function get_state(key, size, tag)
  local v = redis.pcall('GET', key)
  if not v then return nil end
  if type(v) == 'string' and #v == size + 4 and string.byte(v) == tag and ssub(v, size + 1) == STATE_END then
    return v
  end
  return not_state(v)
end

-- put_state writes the packed value v to key with the TTL of a state fresh again in us µs
-- (ttl_ms, below). SET replaces a key of any type, so a hash of the previous format is
-- rewritten in the new one by the same command: a rolling upgrade neither resets a key
-- nor counts it twice.
local function put_state(key, v, us)
  us = us + pad -- ttl_ms(us), inlined: every grant of most algorithms comes here
  if us > MAX_MICROS then us = MAX_MICROS end
  local ms = us / 1000
  local f = ms % 1
  if f > 0 then ms = ms - f + 1 end
  if not (ms >= 2) then ms = 2 end
  redis.call('SET', key, v .. STATE_END, 'PX', sformat('%d', ms))
end

-- put_state_kept writes v to key keeping its TTL: SET ... KEEPTTL costs Redis 7.0 about 8k
-- instructions less than put_state (no TTL to format, parse, set, and rewrite as PXAT for
-- replication), a tenth of a fixed window's grant. Only for a write whose state is fresh
-- again exactly when the key's current TTL ends, which a caller knows only when that TTL
-- was set at the server's TIME (a client clock's writes end on the client's clock) to the
-- same instant (the end of the same window), and only where SET has KEEPTTL
-- (has_keepttl). It returns false, writing nothing, when it cannot.
local function put_state_kept(key, v)
  if not (server_time and has_keepttl) then return false end
  redis.call('SET', key, v .. STATE_END, 'KEEPTTL')
  return true
end

-- get_mark reads the mark a Reset left at key k (package internal/resetmark; the Redis
-- store's Reset writes it, the algorithms' refunds read it): the Reset's instant and the
-- mark's end in µs, or nil. A mark is a string: the tag "R", then the two instants packed
-- as doubles, little-endian.
local function get_mark(k)
  local m = redis.call('GET', k)
  if m and #m == 17 then
    local tag, at, untl = sunpack('<Bdd', m)
    if tag == 82 then return at, untl end
  end
  return nil
end

-- serve ends every script of the module: `return serve(call)`. It makes the function that
-- answers one call, entry(keys, args) -> reply: it sets KEYS, ARGV and redis, then
-- replies call(). Run as a script, serve answers the script's own call at once; loaded
-- as a library (in_library), it returns entry for the library to register, and
-- entry_shared(keys, args, first), which answers a call as entry does, at the server's
-- TIME shared with the calls before it since the last one with first true, which reads
-- it: the multi function of luawire.RateLibrary reads TIME once for all of its calls.
local function serve(call)
  local function entry(keys, args)
    KEYS, ARGV, shared_now = keys, args, nil
    redis = server_redis or api()
    return call()
  end
  if not in_library then return entry(KEYS, ARGV) end
  local function entry_shared(keys, args, first)
    KEYS, ARGV = keys, args
    redis = server_redis or api()
    if first then
      shared_now = nil
      shared_now = read_now('')
    end
    return call()
  end
  return entry, entry_shared
end
