-- Sliding window counter: the Lua twin of algo.SlidingWindowCounter
-- (sliding_window_counter.go), run after prelude.lua. Same state, same arithmetic in the
-- same order as the Go transition.
--
-- KEYS[1]  string "C" win curr prev (get_state of the base: a tag byte, then doubles
--          packed little-endian, 25 bytes): win = index of the window curr counts (index =
--          floor(now / window)), curr = its count, prev = the count of window win-1. No
--          key: no grants. A hash {win, curr, prev} (the format of earlier versions) is
--          still read, and rewritten in this one by the next write.
-- ARGV[5]  limit, permits per sliding window and the largest N (integer ≤ 2^53)
-- ARGV[6]  window length in µs (integer ≥ 1)
--
-- estimate(t) = prev·(1 − (t − start)/window) + curr. The admission test is computed once,
-- as the earliest integer instant t_need at which estimate(t) + N ≤ limit:
--   t_need = start + ceil(window·(1 − (limit − curr − N)/prev))   (doubles, as in Go)
-- Counts are integers below 2^53; "curr + N > limit" is computed as "curr > limit - N",
-- which cannot round. TTL: until both counters have left the sliding window.

local limit = config_num(ARGV[5])
local w = config_num(ARGV[6])

local valid, s_win, s_curr, s_prev = false, 0, 0, 0
local v = get_state(KEYS[1], 25, 67) -- 67: "C"
if v == true then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'win', 'curr', 'prev')
  if st[1] and st[2] and st[3] then
    valid, s_win, s_curr, s_prev = true, tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
  end
elseif v then
  valid = true
  local _
  _, s_win, s_curr, s_prev = struct.unpack('<Bddd', v)
end

local cur = math.floor(now / w) -- floor_div

-- need is the offset in µs from the start of a window from which k more permits fit beside
-- curr, with prev in the window before: ceil(window·(1 − (limit − curr − k)/prev)), or 0
-- when prev is 0. The caller ensures curr + k ≤ limit. The span may exceed MAX_MICROS (a
-- window can be longer): ceil_count, not ceil_micros.
local function need(curr, prev, k)
  if prev <= 0 then return 0 end
  return ceil_count(w * (1 - (limit - curr - k) / prev))
end

-- remaining is the most a request at now could take without waiting: 0 while the state is
-- in a future window, else the largest r with need(curr, prev, r) ≤ now − start. It starts
-- from limit − curr − ceil(prev·(end − now)/window), the same in exact arithmetic, and
-- steps until it agrees with need, which rounding at an exact boundary may not.
local function remaining(win, curr, prev)
  local start = win * w
  if now < start or curr >= limit then return 0 end
  local weighted = prev * (start + w - now) / w
  local r = limit - curr - ceil_count(weighted)
  if r < 0 then r = 0 end
  if r > limit - curr then r = limit - curr end
  local elapsed = now - start
  while r > 0 and need(curr, prev, r) > elapsed do r = r - 1 end
  while r < limit - curr and need(curr, prev, r + 1) <= elapsed do r = r + 1 end
  return r
end

-- The grant in the window of the state's view (the commonest decision) is the hot path:
-- straight line, with no closure but need and remaining (the reply's Remaining), as in
-- fixed_window.lua; any other case falls through to the general code below, which decides
-- it from the start.
if op == 'apply' and n <= limit and n > 0 then
  local win, curr, prev = cur, 0, 0 -- view(), below
  if valid and not (s_win < cur - 1) then
    if s_win == cur - 1 then prev = s_curr else win, curr, prev = s_win, s_curr, s_prev end
  end
  local start = win * w
  if not (curr > limit - n) then -- fit(win, curr, prev, n, now), below
    local t = math.max(now, start, start + need(curr, prev, n))
    local wait = t - now
    if t < start + w and wait <= max_wait then
      curr = curr + n
      local r = (win + 2) * w - now -- reset(win, curr, prev): curr > 0
      local s = struct.pack('<Bddd', 67, win, curr, prev)
      -- A key of this format already counting grants in window win expires when win + 1
      -- ends: every write since the first grant in win set that TTL (a refund of all of
      -- them sets another). See put_state_kept.
      if not (v ~= true and valid and s_win == win and s_curr > 0 and put_state_kept(KEYS[1], s)) then
        put_state(KEYS[1], s, r)
      end
      return {1, limit, remaining(win, curr, prev), 0, dur(r), dur(wait), t}
    end
  end
end

-- view returns the counters as seen from window cur: shifted forward when cur is later
-- than the state's window; a state in a future window (reservations) is kept as it is.
local function view()
  if not valid or s_win < cur - 1 then return cur, 0, 0 end
  if s_win == cur - 1 then return cur, 0, s_curr end
  return s_win, s_curr, s_prev
end

-- fit returns the earliest instant ≥ from inside window win at which k more permits fit,
-- or nil when none does.
local function fit(win, curr, prev, k, from)
  local start = win * w
  if curr > limit - k then return nil end
  local t = math.max(from, start, start + need(curr, prev, k))
  if t >= start + w then return nil end
  return t
end

-- reset is the time in µs until both counters have left the sliding window. With both at
-- zero in a future window (its reservations were refunded) the state is fresh once that
-- window has begun.
local function reset(win, curr, prev)
  if curr > 0 then return (win + 2) * w - now end
  if prev > 0 then return (win + 1) * w - now end
  return math.max(0, win * w - now)
end

if op == 'apply' then
  local win, curr, prev = view()
  if n > limit or n <= 0 then
    return {0, limit, remaining(win, curr, prev), MAX_MICROS, dur(reset(win, curr, prev)), 0, 0}
  end
  -- Try the state's window, then the next (prev := curr), then the one after (empty).
  local t = fit(win, curr, prev, n, now)
  if not t then
    win, curr, prev = win + 1, 0, curr
    t = fit(win, curr, prev, n, now)
    if not t then
      win, curr, prev = win + 1, 0, 0
      t = win * w
    end
  end
  local wait = t - now
  if wait > max_wait then
    win, curr, prev = view()
    return {0, limit, remaining(win, curr, prev), retry_after(wait, max_wait), dur(reset(win, curr, prev)), 0, 0}
  end
  curr = curr + n
  local r = reset(win, curr, prev) -- > 0: curr > 0
  local s = struct.pack('<Bddd', 67, win, curr, prev)
  -- A key of this format already counting grants in window win expires when win + 1 ends:
  -- every write since the first grant in win set that TTL (a refund of all of them sets
  -- another). See put_state_kept.
  if not (v ~= true and valid and s_win == win and s_curr > 0 and put_state_kept(KEYS[1], s)) then
    put_state(KEYS[1], s, r)
  end
  return {1, limit, remaining(win, curr, prev), 0, dur(r), dur(wait), t}
elseif op == 'refund' then
  -- Permits go back to the window they were granted in, while it is still counted.
  if not valid or not (n > 0) then return 0 end
  local curr, prev = s_curr, s_prev
  local gw = floor_div(grant_at, w)
  if gw == s_win then
    curr = curr - n
    if curr < 0 then curr = 0 end
  elseif gw == s_win - 1 then
    prev = prev - n
    if prev < 0 then prev = 0 end
  end
  if curr == s_curr and prev == s_prev then return 0 end -- nothing to write
  put_state(KEYS[1], struct.pack('<Bddd', 67, s_win, curr, prev), reset(s_win, curr, prev)) -- kept: see keep
  return 0
end
return redis.error_reply('sliding-counter: unknown operation ' .. tostring(op))
