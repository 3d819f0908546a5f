-- Token bucket: the Lua twin of algo.TokenBucket (token_bucket.go), run after prelude.lua.
-- Same state, same float operations in the same order as the Go transition, so Redis and
-- the local store decide bit for bit alike.
--
-- KEYS[1]  string "T" tokens last act rb rate (get_state of the base: a tag byte, then
--          doubles packed little-endian, 41 bytes): tokens = tokens at last (negative while
--          reservations are outstanding), last = µs of the last write, act = µs at which the
--          latest grant acts (x/time/rate's lastEvent), rb = 1 while every outstanding grant
--          acts n/rate after the one before (act may roll back), else 0, rate = the rate of
--          the last write. No key: a full bucket. A hash of the same fields (the format of
--          earlier versions, tokens and rate printed with %.17g) is still read, and
--          rewritten in this one by the next write; in the oldest such keys act is missing
--          (a refund gives nothing back until the key's next grant) and so is rate (the
--          current one).
-- ARGV[5]  rate, tokens added per second (double, %.17g)
-- ARGV[6]  burst, the bucket size and the largest N (integer ≤ 2^53)
--
-- Tokens are doubles, as in golang.org/x/time/rate; the refill is seconds(elapsed µs) ×
-- rate. TTL: the time until the bucket is full again, counted from the caller's now (so
-- it includes how far a backwards now is behind last).

-- The call's config and stored state, which the helpers below read: set at the start of
-- every call, so that a function library makes the helpers once (closures made on every
-- call cost Redis more than the rest of a decision's Lua).
local rate, burst, refill, valid, s_tokens, s_last

-- rollback is n/rate in whole µs, rounded down (never before x/time/rate's roll-back).
local function rollback(k) return floor(k / rate * 1e6) end

-- advance returns the tokens at t (never above burst) and the instant used, which never
-- goes back before last.
local function advance(t)
  if not valid then return burst, t end
  if t < s_last then t = s_last end
  local tokens = s_tokens + seconds(t - s_last) * refill
  if tokens > burst then tokens = burst end
  return tokens, t
end

-- full_by: whether a bucket holding b tokens at last, refilling at r, is full at t + d.
-- seconds is inlined for a span under a second (a grant's reset checks it twice).
local function full_by(d, b, last, r, t)
  local us = t + d - last
  if us > 0 and us < 1000000 then return b + (us * 1000) / 1e9 * r >= burst end
  return b + seconds(us) * r >= burst
end

-- until_full is the time in µs from t (≥ last) until a bucket holding b tokens at last,
-- refilling at r, holds burst tokens by advance's arithmetic (TokenBucket.untilFullFrom).
-- b nil: a fresh bucket, full already.
local function until_full(b, last, r, t)
  if b == nil then return 0 end
  -- At t = last (every grant asks so) the refill is b + 0: skipped, as in Go.
  local tokens = b
  if t ~= last then tokens = b + seconds(t - last) * r end
  if tokens > burst then tokens = burst end
  local d = ceil_micros((burst - tokens) / r * 1e6)
  -- The estimate is almost always the answer: checked here, it is what first_micro
  -- returns, as in Go. At t = last, full_by(0) is b ≥ burst, which d = 1 rules out.
  if d < MAX_MICROS and (d == 0 or d == 1 and t == last or not full_by(d - 1, b, last, r, t)) and
    full_by(d, b, last, r, t) then
    return d
  end
  return first_micro(d, 0, full_by, b, last, r, t)
end

-- grants_at is TokenBucket.grantsAt: whether apply would grant k with max wait mw at u on
-- the stored state.
local function grants_at(u, k, mw)
  local tokens, t = advance(u)
  local left = tokens - k
  if left >= 0 or -left / rate * 1e9 < 1 then return true end
  return t - u + ceil_micros(-left / rate * 1e6) <= mw
end

-- grants_in is grants_at at from + d: first_micro's ok for a retry.
local function grants_in(d, from, k, mw) return grants_at(from + d, k, mw) end

-- until_permit is TokenBucket.untilPermit on the stored state: the µs from now until one
-- permit is granted with no wait (0: now).
local function until_permit()
  if grants_at(now, 1, 0) then return 0 end
  local tokens, t = advance(now)
  return first_micro(t - now + ceil_micros((1 - tokens) / rate * 1e6), 1, grants_in, now, 1, 0)
end

-- decide runs on every call (the helpers above, in a library, once when it loads).
local function decide()
rate = config_nums[ARGV[5]] or config_num(ARGV[5])
burst = config_nums[ARGV[6]] or config_num(ARGV[6])

-- s_act nil: not known; s_rb: the latest grant acts n/rate after the one before it, so its
-- refund may roll act back; s_rate nil: not known (the current rate)
valid, s_tokens, s_last = false, 0, 0
local s_act, s_rb, s_rate = nil, false, nil
-- get_state(KEYS[1], 41, 84) and the unpack, inlined (see not_state)
local v, tag, f1, f2, f3, f4, f5 = redis.pcall('GET', KEYS[1])
if v and #v == 45 and ssub(v, 42) == STATE_END then tag, f1, f2, f3, f4, f5 = sunpack('<Bddddd', v) end
if tag == 84 then -- "T"
  valid, s_tokens, s_last, s_act, s_rb, s_rate = true, f1, f2, f3, f4 == 1, f5
elseif not_state(v) then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'tokens', 'last', 'act', 'rb', 'rate')
  valid = st[1] and st[2] and true or false -- false for a missing field
  if valid then s_tokens, s_last = tonumber(st[1]), tonumber(st[2]) end
  s_act = valid and st[3] and tonumber(st[3]) or nil
  s_rb = st[4] == '1'
  s_rate = valid and st[5] and tonumber(st[5]) or nil
end

-- refill is the rate until the next write: the lower of rate and the rate of the last write
-- (not known in keys of older versions: the current one), as in algo.TokenBucket.refill.
refill = rate
if s_rate and s_rate > 0 and s_rate < rate then refill = s_rate end

if charging then
  -- TokenBucket.charge: one that fits in what is left now is the grant of an apply with no
  -- wait (max_wait is 0), below; one that does not takes n whatever is left (below empty:
  -- debt), act kept, rb ended.
  local tokens, t = advance(now)
  local left = tokens - n
  if not (n <= burst and (left >= 0 or -left / rate * 1e9 < 1)) then
    local lag = t - now
    local act = t
    if valid and s_act and s_act > t then act = s_act end
    local reset = lag + until_full(left, t, rate, t)
    store(spack('<Bddddd', 84, left, t, act, 0, rate), reset)
    valid, s_tokens, s_last, refill = true, left, t, rate -- the state as written
    return {1, burst, floor_count(left), dur(until_permit()), dur(reset), 0, t}
  end
end
if op == 'apply' then
  local tokens, t = advance(now)
  -- lag is how far a backwards clock is behind the state: ResetAfter counts from the
  -- caller's now, so the key never expires before its state is fresh.
  local lag = t - now
  if n > burst or n <= 0 then
    return {0, burst, floor_count(tokens), MAX_MICROS, dur(lag + until_full(valid and s_tokens or nil, s_last, refill, t)), 0, 0}
  end
  local left = tokens - n
  local wait = 0
  -- A deficit that refills in under a nanosecond is no deficit: x/time/rate truncates its
  -- wait to whole nanoseconds, and decisions match it exactly.
  if left < 0 and -left / rate * 1e9 >= 1 then wait = ceil_micros(-left / rate * 1e6) end
  -- delay: the wait counted from the caller's now (lag later behind a backwards clock), as
  -- in the Go twin; a grant with no wait is taken now.
  local delay = wait
  if wait > 0 then delay = lag + wait end
  if delay > max_wait then
    if refill ~= rate then wait = ceil_micros(-left / refill * 1e6) end -- refills at refill
    -- A denial writes nothing, like x/time/rate. RetryAfter: the first µs at which the
    -- same request is granted.
    local retry = MAX_MICROS
    if lag + wait < MAX_MICROS then retry = first_micro(lag + wait - max_wait, 1, grants_in, now, n, max_wait) end
    return {0, burst, floor_count(tokens), dur(retry), dur(lag + until_full(valid and s_tokens or nil, s_last, refill, t)), 0, 0}
  end
  local act = t + wait
  -- rb as in the Go twin: every outstanding grant spaced by its n/rate
  local rb = ((not valid) or (not s_act) or s_rb or s_act <= t) and act - rollback(n) >= (s_act or 0)
  if s_act and s_act >= act then act, rb = s_act, false end -- never moves back
  local reset = lag + until_full(left, t, rate, t)
  store(spack('<Bddddd', 84, left, t, act, rb and 1 or 0, rate), reset)
  local rem, retry = floor_count(left), 0
  if charging and rem < 1 then -- a charge's RetryAfter, on the state as written
    valid, s_tokens, s_last, refill = true, left, t, rate
    retry = until_permit()
  end
  return {1, burst, rem, dur(retry), dur(reset), dur(delay), t + wait}
elseif op == 'refund' then
  -- Gives back what x/time/rate's CancelAt does: n minus the tokens reserved after the
  -- grant (rate·(act − at)), never below zero; the latest grant's refund moves act back.
  if not valid or not s_act or not (n > 0) then return 0 end
  local span = s_act - grant_at
  if span < 0 then span = 0 end
  local restore = n - seconds(span) * rate
  if not (restore > 0) then return 0 end
  local tokens, t = advance(now)
  tokens = tokens + restore
  if tokens > burst then tokens = burst end -- kept even when full: see keep
  local act, rb = s_act, s_rb
  if grant_at == s_act and s_rb then
    local back = rollback(n)
    if back <= grant_at - t then act = grant_at - back end
  else
    rb = false
  end
  if tokens == s_tokens and t == s_last and act == s_act and rb == s_rb and s_rate == rate then
    return 0 -- nothing to write
  end
  -- kept (see keep); the TTL is counted from the caller's now, as in apply
  put_state(KEYS[1], spack('<Bddddd', 84, tokens, t, act, rb and 1 or 0, rate),
    t - now + until_full(tokens, t, rate, t))
  return 0
end
return redis.error_reply('token-bucket: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
