-- Fixed window: the Lua twin of algo.FixedWindow (fixed_window.go), run after prelude.lua.
-- Same state and the same integer arithmetic as the Go transition.
--
-- KEYS[1]  hash: win = index of the tail window (the latest holding grants; window index =
--          floor(now / window)), count = permits granted in it. No key: no grants.
-- ARGV[5]  limit, permits per window and the largest N (integer ≤ 2^53)
-- ARGV[6]  window length in µs (integer ≥ 1)
--
-- All values are integers below 2^53, so the arithmetic is exact; "count + N > limit" is
-- computed as "count > limit - N", which cannot round. TTL: until the tail window ends.

local limit = tonumber(ARGV[5])
local w = tonumber(ARGV[6])

local st = redis.call('HMGET', KEYS[1], 'win', 'count')
local valid = st[1] and st[2] and true or false -- false for a missing key (or field)
local s_win, s_count = 0, 0
if valid then s_win, s_count = tonumber(st[1]), tonumber(st[2]) end

local cur = floor_div(now, w)

-- remaining is what is left in the current window: 0 while the tail is in the future, and
-- never below 0 (count exceeds limit after a limit decrease on the same slot).
local function remaining(win, count)
  if win ~= cur then return 0 end
  return math.max(0, limit - count)
end

-- reset is the time in µs until window win has ended. When it holds nothing (a reservation
-- in a future window was refunded) the state is fresh once win has begun.
local function reset(win, count)
  if count == 0 then return math.max(0, win * w - now) end
  return (win + 1) * w - now
end

if op == 'apply' then
  local win, count = cur, 0
  if valid and s_win >= cur then win, count = s_win, s_count end
  if n > limit or n <= 0 then
    return {0, limit, remaining(win, count), MAX_MICROS, dur(reset(win, count)), 0, 0}
  end
  local grant, total = win, count + n
  if count > limit - n then grant, total = win + 1, n end
  local wait = grant * w - now
  if wait < 0 then wait = 0 end
  if wait > max_wait then
    return {0, limit, remaining(win, count), retry_after(wait, max_wait), dur(reset(win, count)), 0, 0}
  end
  redis.call('HSET', KEYS[1], 'win', num(grant), 'count', num(total))
  local r = reset(grant, total)
  expire(r)
  return {1, limit, remaining(grant, total), 0, dur(r), dur(wait), now + wait}
elseif op == 'refund' then
  -- Permits go back only to the window they were granted in, and only while it is the tail.
  if not valid or not (n > 0) or s_win ~= floor_div(grant_at, w) then return 0 end
  local count = s_count - n
  if count < 0 then count = 0 end
  if count == s_count then return 0 end -- nothing to write
  redis.call('HSET', KEYS[1], 'count', num(count))
  keep(reset(s_win, count))
  return 0
end
return redis.error_reply('fixed-window: unknown operation ' .. tostring(op))
