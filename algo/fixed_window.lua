-- Fixed window: the Lua twin of algo.FixedWindow (fixed_window.go), run after prelude.lua.
-- Same state and the same integer arithmetic as the Go transition.
--
-- KEYS[1]  string "F" win count (get_state of the base: a tag byte, then doubles packed
--          little-endian, 17 bytes): win = index of the tail window (the latest holding
--          grants; window index = floor(now / window)), count = permits granted in it
--          (charges included: it may pass limit, never 2^53).
--          No key: no grants. A hash {win, count} (the format of earlier versions) is still read,
--          and rewritten in this one by the next write.
-- ARGV[5]  limit, permits per window and the largest N (integer ≤ 2^53)
-- ARGV[6]  window length in µs (integer ≥ 1)
--
-- All values are integers below 2^53, so the arithmetic is exact; "count + N > limit" is
-- computed as "count > limit - N", which cannot round. TTL: until the tail window ends.
--
-- The grant is the hot path, the one ulule/limiter's INCRBY + PEXPIRE is compared with
-- (docs/benchmarks.md): one GET, one SET, no closure, no number printed but the TTL.

-- remaining is what is left in window cur: 0 while the tail is in the future, and never
-- below 0 (count exceeds limit after a limit decrease on the same slot). The helpers take
-- the call's values as arguments: a library makes them once, not on every call.
local function remaining(win, count, cur, limit)
  if win ~= cur then return 0 end
  local r = limit - count
  if r > 0 then return r end
  return 0
end

-- reset is the time in µs from now until window win (of w µs) has ended. When it holds
-- nothing (a reservation in a future window was refunded) the state is fresh once win has
-- begun.
local function reset(win, count, w, now)
  if count == 0 then
    local r = win * w - now
    if r > 0 then return r end
    return 0
  end
  return (win + 1) * w - now
end

-- decide runs on every call (the helpers above, in a library, once when it loads).
local function decide()
local limit = config_nums[ARGV[5]] or config_num(ARGV[5])
local w = config_nums[ARGV[6]] or config_num(ARGV[6])

local valid, s_win, s_count = false, 0, 0
-- get_state(KEYS[1], 17, 70) and the unpack, inlined (see not_state): p_win and p_count
-- are the fields of a state of this format, else nil.
local v, tag, p_win, p_count = redis.pcall('GET', KEYS[1])
if v and #v == 21 and ssub(v, 18) == STATE_END then tag, p_win, p_count = sunpack('<Bdd', v) end
if tag == 70 then -- "F"
  valid, s_win, s_count = true, p_win, p_count
elseif not_state(v) then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'win', 'count')
  if st[1] and st[2] then valid, s_win, s_count = true, tonumber(st[1]), tonumber(st[2]) end
end

local cur = now / w -- floor_div(now, w), inlined
local f = cur % 1
if f == f then cur = cur - f end

if charging and n > 0 then
  -- FixedWindow.charge: n counted in the tail window whatever it holds, at most 2^53.
  local win, count = cur, 0
  if valid and s_win >= cur then win, count = s_win, s_count end
  if count > MAX_EXACT - n then count = MAX_EXACT else count = count + n end
  local r = (win + 1) * w - now -- reset(win, count, w, now): count > 0
  put_state(KEYS[1], spack('<Bdd', 70, win, count), r)
  -- RetryAfter: one permit goes in window win if it has room (once it has begun), else
  -- in the next.
  local next = win
  if count > limit - 1 then next = win + 1 end
  local at = win * w
  if now > at then at = now end
  return {1, limit, remaining(win, count, cur, limit), retry_after(next * w - now, 0), dur(r), 0, at}
end

if op == 'apply' and n <= limit and n > 0 then
  local win, count = cur, 0
  if valid and s_win >= cur then win, count = s_win, s_count end
  local grant, total = win, count + n
  if count > limit - n then grant, total = win + 1, n end
  local wait = grant * w - now
  if wait < 0 then wait = 0 end
  if wait <= max_wait then
    -- total > 0: the state is fresh once window grant has ended, and never before now.
    local r = (grant + 1) * w - now
    local s = spack('<Bdd', 70, grant, total)
    -- A key of this format already holding grants in window grant expires when it ends:
    -- every write since the first grant in it set that TTL (a refund to 0 sets another).
    -- put_state_kept, inlined.
    if p_win == grant and p_count > 0 and server_time and has_keepttl then
      redis.call('SET', KEYS[1], s .. STATE_END, 'KEEPTTL')
    else
      put_state(KEYS[1], s, r)
    end
    local rem = 0
    if grant == cur and total < limit then rem = limit - total end
    -- dur, inlined: r > 0, and wait is in [0, max_wait]
    if r > MAX_MICROS then r = MAX_MICROS end
    return {1, limit, rem, 0, r, wait, now + wait}
  end
end

if op == 'apply' then -- a denial: written nothing
  local win, count = cur, 0
  if valid and s_win >= cur then win, count = s_win, s_count end
  if n > limit or n <= 0 then
    return {0, limit, remaining(win, count, cur, limit), MAX_MICROS, dur(reset(win, count, w, now)), 0, 0}
  end
  local grant = win
  if count > limit - n then grant = win + 1 end
  local wait = grant * w - now
  return {0, limit, remaining(win, count, cur, limit), retry_after(wait, max_wait), dur(reset(win, count, w, now)), 0, 0}
elseif op == 'refund' then
  -- Permits go back only to the window they were granted in, and only while it is the tail.
  if not valid or not (n > 0) or s_win ~= floor_div(grant_at, w) then return 0 end
  local count = s_count - n
  if count < 0 then count = 0 end
  if count == s_count then return 0 end -- nothing to write
  put_state(KEYS[1], spack('<Bdd', 70, s_win, count), reset(s_win, count, w, now)) -- kept: see keep
  return 0
end
return redis.error_reply('fixed-window: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
