-- Fixed window: the Lua twin of algo.FixedWindow (fixed_window.go), run after prelude.lua.
-- Same state and the same integer arithmetic as the Go transition.
--
-- KEYS[1]  string "F" win count (get_state of the base: a tag byte, then doubles packed
--          little-endian, 17 bytes): win = index of the tail window (the latest holding
--          grants; window index = floor(now / window)), count = permits granted in it.
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

local limit = config_num(ARGV[5])
local w = config_num(ARGV[6])

local valid, s_win, s_count = false, 0, 0
local v = get_state(KEYS[1], 17, 70) -- 70: "F"
if v == true then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'win', 'count')
  if st[1] and st[2] then valid, s_win, s_count = true, tonumber(st[1]), tonumber(st[2]) end
elseif v then
  valid = true
  local _
  _, s_win, s_count = struct.unpack('<Bdd', v)
end

local cur = math.floor(now / w) -- floor_div

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
    local s = struct.pack('<Bdd', 70, grant, total)
    -- A key of this format already holding grants in window grant expires when it ends:
    -- every write since the first grant in it set that TTL (a refund to 0 sets another).
    if not (v ~= true and valid and s_win == grant and s_count > 0 and put_state_kept(KEYS[1], s)) then
      put_state(KEYS[1], s, r)
    end
    local rem = 0
    if grant == cur and total < limit then rem = limit - total end
    return {1, limit, rem, 0, dur(r), dur(wait), now + wait}
  end
end

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

if op == 'apply' then -- a denial: written nothing
  local win, count = cur, 0
  if valid and s_win >= cur then win, count = s_win, s_count end
  if n > limit or n <= 0 then
    return {0, limit, remaining(win, count), MAX_MICROS, dur(reset(win, count)), 0, 0}
  end
  local grant = win
  if count > limit - n then grant = win + 1 end
  local wait = grant * w - now
  return {0, limit, remaining(win, count), retry_after(wait, max_wait), dur(reset(win, count)), 0, 0}
elseif op == 'refund' then
  -- Permits go back only to the window they were granted in, and only while it is the tail.
  if not valid or not (n > 0) or s_win ~= floor_div(grant_at, w) then return 0 end
  local count = s_count - n
  if count < 0 then count = 0 end
  if count == s_count then return 0 end -- nothing to write
  put_state(KEYS[1], struct.pack('<Bdd', 70, s_win, count), reset(s_win, count)) -- kept: see keep
  return 0
end
return redis.error_reply('fixed-window: unknown operation ' .. tostring(op))
