-- Prelude shared by every algorithm script: newScript (scripts.go) puts it after the base
-- every script of the module starts with (internal/luawire/base.lua: serve, KEYS, ARGV,
-- redis, MAX_MICROS, num, read_now, ttl_ms, get_state, put_state) and before the
-- algorithm's files, so the helpers below reproduce algo.go's once for all of them.
--
-- The calling convention (KEYS, ARGV, the replies, units and precision, expiry) is
-- described once, on algo.Script in lua.go; internal/luawire encodes and decodes it in Go.
-- This file decodes ARGV at its end.

-- Like the base, it only defines constants and functions; twin, at its end, decodes
-- ARGV of one call.
--
-- In "peek" mode (ARGV[1], see algo.Script) the script answers as "apply" and writes
-- nothing. Rather than a flag checked before every write of every twin, redis is shadowed
-- for the whole call by a table whose call runs the reads and skips the writes, so the
-- twins stay unchanged and no write can be forgotten. A command in neither list raises an
-- error: a twin that starts using one must be listed here (the differential test of
-- package algo checks that a peek leaves keys and TTLs untouched).
local function peeking(real)
  local reads = {GET = true, HMGET = true, HGET = true, HGETALL = true, LLEN = true, LRANGE = true,
    LINDEX = true, TIME = true, EXISTS = true, PTTL = true}
  local writes = {HSET = true, HMSET = true, HDEL = true, DEL = true, PEXPIRE = true, EXPIRE = true,
    RPUSH = true, LPUSH = true, LSET = true, LTRIM = true, LREM = true, SET = true}
  -- via runs cmd with call or pcall (get_state reads with pcall: see base.lua)
  local function via(run)
    return function(cmd, ...)
      local c = string.upper(cmd)
      if reads[c] then return run(cmd, ...) end
      if writes[c] then return 0 end -- skipped; no twin reads a write's reply
      error('peek: command ' .. cmd .. ' is not known to be a read or a write')
    end
  end
  return setmetatable({call = via(real.call), pcall = via(real.pcall)}, {__index = real})
end
local MAX_EXACT = 9007199254740992  -- 2^53: the largest count a double holds exactly

-- ceil_micros rounds a wait up to whole µs, clamped to [0, MAX_MICROS]; NaN gives 0.
-- The rounding helpers round with % (x % 1 is x - floor(x), exact for a finite x), not
-- math.floor and math.ceil: a global lookup and a C call cost Redis ten times as much.
local function ceil_micros(x)
  if not (x > 0) then return 0 end
  if x >= MAX_MICROS then return MAX_MICROS end
  local f = x % 1
  if f > 0 then return x - f + 1 end
  return x
end

-- ceil_count rounds a non-negative count or span up without the MAX_MICROS clamp.
local function ceil_count(x)
  if not (x > 0) then return 0 end
  local f = x % 1 -- NaN for +inf, kept
  if f > 0 then return x - f + 1 end
  return x
end

-- floor_count rounds a permit count down, clamped to [0, 2^53]; NaN gives 0.
local function floor_count(x)
  if not (x > 0) then return 0 end
  if x >= MAX_EXACT then return MAX_EXACT end
  return x - x % 1
end

-- dur is a duration as replied: clamped to [0, MAX_MICROS], like algo.toDuration.
local function dur(us)
  if us >= MAX_MICROS then return MAX_MICROS end
  if us <= 0 then return 0 end
  return us
end

-- retry_after is the RetryAfter of a request denied because its wait exceeds max_wait
-- (µs), like algo.retryAfter: the time until its wait has shrunk to max_wait, or never
-- (MAX_MICROS) when the wait was clamped to MAX_MICROS.
local function retry_after(wait, mw)
  if wait >= MAX_MICROS then return MAX_MICROS end
  return dur(wait - mw)
end

-- first_micro is algo.firstMicro: the least d ≥ lo at which ok(d, a, b, c, e) holds, from
-- the estimate d, moved at most 4 µs each way; estimates of MAX_MICROS or more are kept.
-- The token and leaky buckets place their retry and reset times with it. The arguments
-- after ok are passed on, so that ok can be a function made once rather than a closure
-- made on every call.
local function first_micro(d, lo, ok, a, b, c, e)
  if d >= MAX_MICROS then return d end
  local i = 0
  while i < 4 and d > lo and ok(d - 1, a, b, c, e) do d, i = d - 1, i + 1 end
  i = 0
  while i < 4 and d < MAX_MICROS and not ok(d, a, b, c, e) do d, i = d + 1, i + 1 end
  return d
end

-- floor is math.floor: an infinite or NaN x (f is NaN) is kept. floor_div divides
-- integers rounding towards minus infinity, like algo.floorDiv. The rounded quotient of
-- two integers below 2^53 never crosses an integer, so it is exact.
local function floor(x)
  local f = x % 1
  if f ~= f then return x end
  return x - f
end
local function floor_div(a, b) return floor(a / b) end

-- seconds converts an elapsed count of µs (≥ 0) to seconds with the same operations as
-- algo.seconds, itself time.Duration.Seconds on the same span in ns. Under a second (the
-- usual span) sec is 0 and 0 + x is x: skipped, as in Go (0 for -0 too, as sec + 0 is).
local function seconds(us)
  if us == 0 then return 0 end
  if us > 0 and us < 1000000 then return (us * 1000) / 1e9 end
  local sec = us / 1000000 -- floor_div(us, 1000000), inlined
  local f = sec % 1
  if f == f then sec = sec - f end
  local rem = us - sec * 1000000
  return sec + (rem * 1000) / 1e9
end

-- keep sets every key's TTL to reset µs (ttl_ms of the base: padded, at least 2 ms). The
-- refunds of the rate algorithms keep (the sliding log with keep, the others with
-- put_state, which sets the same TTL), never delete: a state that is fresh again
-- is kept for the minimum TTL, as the Go twin keeps it, because its timestamps guard
-- against a clock stepping back (a sliding log that forgot its newest entry would let an
-- earlier instant admit again what it already admitted).
local function keep(reset)
  local ms = num(ttl_ms(reset))
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ms) end
end

-- expire is keep, except that a state fresh again (reset ≤ 0) is deleted.
local function expire(reset)
  if reset <= 0 then
    redis.call('DEL', unpack(KEYS))
    return
  end
  keep(reset)
end

-- store writes the packed state v of KEYS[1] with the TTL of reset µs (put_state of the
-- base), or deletes the key when the state is fresh again (reset ≤ 0), as expire does.
-- Every twin but the sliding log's keeps its state so, in one string (see base.lua).
local function store(v, reset)
  if reset <= 0 then
    redis.call('DEL', KEYS[1])
    return
  end
  put_state(KEYS[1], v, reset)
end

-- peeked is the reply of a peek (see algo.Peek): d, the reply of the apply it stands for,
-- with the Remaining of probe, the reply to a request above any limit, which every twin
-- answers with what is available now. An error reply passes through.
local function peeked(d, probe)
  if type(d) == 'table' and type(probe) == 'table' and probe[1] == 0 and probe[3] then d[3] = probe[3] end
  return d
end

-- The values of one call, decoded by twin for decide (see below): op is ARGV[1] ("apply"
-- or "refund"; a peek and a charge run as an apply), now is in µs, n is N, grant_at the
-- refunded grant's At in µs (refund only), max_wait MaxWait in µs (apply only; 0 for a
-- charge). charging is true for a "charge" (algo.Request.Charge): an apply that records n
-- as used whatever is left, which only the twins of algorithms that state
-- algo.Chargeable read (a store sends a charge to no other). The config is ARGV[5..].
local op, now, n, grant_at, max_wait, charging

-- twin returns the call (for serve of the base) of the algorithm whose transition is
-- decide: a function of no arguments that decides the call in op, now, n, grant_at,
-- max_wait, KEYS and ARGV and returns its reply. Each algorithm's file defines its decide
-- and ends with `return serve(twin(decide))` (see newScript in scripts.go).
local function twin(decide)
  return function()
    -- is_peek: a peek, which runs decide twice as an apply whose writes are skipped: see
    -- the top of this file.
    op = ARGV[1]
    local is_peek = op == 'peek'
    if is_peek then redis, op = peeking(redis), 'apply' end
    charging = op == 'charge'
    if charging then op = 'apply' end

    -- N is 1 on most calls, MaxWait 0 (see config_num of the base: "1" == ARGV[3]
    -- compares pointers, tonumber runs strtod), so those skip the rest.
    n = ARGV[3]
    if n == '1' then n = 1 else
      n = tonumber(n)
      -- Above 2^53 tonumber rounds: "9007199254740993" would read as 2^53, a valid size.
      -- Any N above 2^53 exceeds every limit (Go compares int64s), so keep it above:
      -- 2^53 + 2.
      if op == 'apply' and n and n >= MAX_EXACT and ARGV[3] ~= '9007199254740992' then
        n = MAX_EXACT + 2
      end
    end
    -- grant_at and max_wait are the same argument (read once: tonumber is one of the
    -- costlier calls of a script). A store sends MaxWait in [0, MAX_MICROS - 1] already;
    -- a hand-written call gets the same clamp: at least 0, and anything from MAX_MICROS on
    -- (what earlier versions sent for Forever) is MAX_MICROS - 1, because waits are
    -- clamped to MAX_MICROS, which stands for "that long or more" and is never granted.
    grant_at, max_wait = ARGV[4], 0
    if grant_at == '0' or charging then grant_at = 0 else
      grant_at = tonumber(grant_at)
      max_wait = grant_at
      if not (max_wait > 0) then max_wait = 0 elseif max_wait >= MAX_MICROS then max_wait = MAX_MICROS - 1 end
    end

    now = read_now(ARGV[2])

    if is_peek then
      -- What the apply would reply, with the Remaining of a request for more than any
      -- limit (what is available now), as algo.Peek does in Go.
      local d = decide()
      n = MAX_EXACT + 2
      return peeked(d, decide())
    end

    -- A Reset leaves a mark beside the state key it deletes (package internal/resetmark;
    -- the key followed by "!reset", see get_mark of the base): while it lasts
    -- (now < until), a refund of a grant acting before the Reset (grant_at < at) is
    -- dropped, as the local store drops it. It is the key of KEYS[1] with a suffix, so in
    -- the same Cluster slot.
    if op == 'refund' then
      local at, untl = get_mark(KEYS[1] .. '!reset')
      if at and now < untl and grant_at < at then return 0 end
    end
    return decide()
  end
end
