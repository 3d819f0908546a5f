-- Leaky bucket: the Lua twin of algo.LeakyBucket (leaky_bucket.go), run after prelude.lua.
-- Same state, same float operations in the same order as the Go transition.
--
-- KEYS[1]  string "L" level last act rate (get_state of the base: a tag byte, then doubles
--          packed little-endian, 33 bytes): level = units in the bucket at last, last = µs
--          of the last write, act = µs at which the latest grant acts, rate = the rate of
--          the last write. No key: an empty bucket. A hash of the same fields (the format
--          of earlier versions, level and rate printed with %.17g) is still read, and
--          rewritten in this one by the next write; in the oldest such keys act is missing
--          (a refund gives nothing back until the key's next grant) and so is rate (the
--          current one).
-- ARGV[5]  rate, units leaked per second (double, %.17g)
-- ARGV[6]  capacity, the most units held and the largest N (integer ≤ 2^53)
--
-- MaxWait 0 meters (allowed when N fits now); MaxWait > 0 shapes: the level is the queue
-- ahead, which leaks out in level/rate seconds. TTL: the time until the bucket is empty,
-- counted from the caller's now (so it includes how far a backwards now is behind last).

-- decide runs on every call (see scripts.go).
local function decide()
local rate = config_num(ARGV[5])
local capacity = config_num(ARGV[6])

-- s_act nil: not known; s_rate nil: not known (the current rate)
local valid, s_level, s_last, s_act, s_rate = false, 0, 0, nil, nil
local v = get_state(KEYS[1], 33, 76) -- 76: "L"
if v == true then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'level', 'last', 'act', 'rate')
  valid = st[1] and st[2] and true or false -- false for a missing field
  if valid then s_level, s_last = tonumber(st[1]), tonumber(st[2]) end
  s_act = valid and st[3] and tonumber(st[3]) or nil
  s_rate = valid and st[4] and tonumber(st[4]) or nil
elseif v then
  valid = true
  local _
  _, s_level, s_last, s_act, s_rate = struct.unpack('<Bdddd', v)
end
-- leak is the rate until the next write: the lower of rate and the rate of the last write
-- (not known in keys of older versions: the current one), as in algo.LeakyBucket.leak.
local leak = rate
if s_rate and s_rate > 0 and s_rate < rate then leak = s_rate end

-- drain returns the level at t (never below 0) and the instant used, which never goes
-- back before last.
local function drain(t)
  if not valid then return 0, t end
  if t < s_last then t = s_last end
  local level = s_level - seconds(t - s_last) * leak
  if level < 0 then level = 0 end
  return level, t
end

-- until_empty is the time in µs from t (≥ last) until a bucket at level b at last, leaking
-- at r, is empty by drain's arithmetic (LeakyBucket.untilEmptyFrom). b nil: a fresh
-- bucket, empty already.
local function until_empty(b, last, r, t)
  if b == nil then return 0 end
  local level = b - seconds(t - last) * r
  if level < 0 then level = 0 end
  return first_micro(ceil_micros(level / r * 1e6), 0,
    function(d) return b - seconds(t + d - last) * r <= 0 end)
end

-- grants_at is LeakyBucket.grantsAt: whether apply would grant k with max wait mw at u on
-- the stored state.
local function grants_at(u, k, mw)
  local level, t = drain(u)
  local bound = capacity - k
  local delay = 0
  if mw > 0 then
    local q = mw / 1e6 * rate
    if q < bound then bound = q end
    local wait = ceil_micros(level / rate * 1e6)
    if wait > 0 then delay = wait + t - u end
  end
  return level <= bound and delay <= mw
end

-- remaining is what fits in the bucket now: capacity − ceil(level), never below 0, so that
-- no rounding of the difference (near 2^53) reports more room than a request would find.
local function remaining(level)
  if level >= capacity then return 0 end -- also past 2^63, where a charge may take it
  local r = capacity - ceil_count(level)
  if r < 0 then r = 0 end
  return r
end

if charging then
  -- LeakyBucket.charge: n poured in whatever the room (past capacity: debt), act kept.
  local level, t = drain(now)
  local lag = t - now
  level = level + n
  local act = t
  if valid and s_act and s_act > t then act = s_act end
  local reset = lag + until_empty(level, t, rate, t)
  store(struct.pack('<Bdddd', 76, level, t, act, rate), reset)
  -- RetryAfter on the state as written: the first µs at which one unit fits now.
  valid, s_level, s_last, leak = true, level, t, rate
  local retry = 0
  if not grants_at(now, 1, 0) then
    retry = ceil_micros((level - (capacity - 1)) / rate * 1e6) + lag
    if retry < 1 then retry = 1 end
    retry = first_micro(retry, 1, function(d) return grants_at(now + d, 1, 0) end)
  end
  return {1, capacity, remaining(level), dur(retry), dur(reset), 0, t}
elseif op == 'apply' then
  local level, t = drain(now)
  -- lag is how far a backwards clock is behind the state: ResetAfter counts from the
  -- caller's now, so the key never expires before its state is fresh.
  local lag = t - now
  if n > capacity or n <= 0 then
    return {0, capacity, remaining(level), MAX_MICROS, dur(lag + until_empty(valid and s_level or nil, s_last, leak, t)), 0, 0}
  end
  -- bound is the highest level at which the request is granted.
  local bound = capacity - n
  local wait = 0
  if max_wait > 0 then
    local q = max_wait / 1e6 * rate
    if q < bound then bound = q end
    wait = ceil_micros(level / rate * 1e6)
  end
  -- delay: the wait counted from the caller's now (lag later behind a backwards clock), as
  -- in the Go twin; a grant with no wait fits now. A denial is retried lag later too.
  local delay = wait
  if wait > 0 then delay = lag + wait end
  if level > bound or delay > max_wait then
    -- Nothing is written: it leaks at leak. RetryAfter: the first µs at which the same
    -- request is granted.
    local retry = ceil_micros((level - bound) / leak * 1e6) + lag
    if retry < 1 then retry = 1 end
    retry = first_micro(retry, 1, function(d) return grants_at(now + d, n, max_wait) end)
    return {0, capacity, remaining(level), dur(retry), dur(lag + until_empty(valid and s_level or nil, s_last, leak, t)), 0, 0}
  end
  level = level + n
  local act = t + wait
  if s_act and s_act > act then act = s_act end -- never moves back
  local reset = lag + until_empty(level, t, rate, t)
  store(struct.pack('<Bdddd', 76, level, t, act, rate), reset)
  return {1, capacity, remaining(level), 0, dur(reset), dur(delay), t + wait}
elseif op == 'refund' then
  -- Takes out what x/time/rate's CancelAt would give back: n minus the units queued
  -- behind the grant (rate·(act − at)), never below zero. act never moves back.
  if not valid or not s_act or not (n > 0) then return 0 end
  local span = s_act - grant_at
  if span < 0 then span = 0 end
  local restore = n - seconds(span) * rate
  if not (restore > 0) then return 0 end
  local level, t = drain(now)
  level = level - restore
  if level < 0 then level = 0 end -- kept even when empty: see keep
  if level == s_level and t == s_last and s_rate == rate then return 0 end -- nothing to write
  -- kept (see keep); the TTL is counted from the caller's now, as in apply
  put_state(KEYS[1], struct.pack('<Bdddd', 76, level, t, s_act, rate), t - now + until_empty(level, t, rate, t))
  return 0
end
return redis.error_reply('leaky-bucket: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
