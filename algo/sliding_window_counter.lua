-- Sliding window counter: the Lua twin of algo.SlidingWindowCounter
-- (sliding_window_counter.go), run after prelude.lua. Same state, same arithmetic in the
-- same order as the Go transition.
--
-- KEYS[1]  string "C" win curr prev (get_state of the base: a tag byte, then doubles
--          packed little-endian, 25 bytes): win = index of the window curr counts (index =
--          floor(now / window)), curr = its count (charges included: it may pass limit,
--          never 2^53), prev = the count of window win-1. No
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

-- The call's config and stored state, which the helpers below read: set at the start of
-- every call, so that a function library makes the helpers once (closures made on every
-- call cost Redis more than the rest of a decision's Lua).
local limit, w, valid, s_win, s_curr, s_prev

-- need is the offset in µs from the start of a window from which k more permits fit beside
-- curr, with prev in the window before: ceil(window·(1 − (limit − curr − k)/prev)), or 0
-- when prev is 0. The caller ensures curr + k ≤ limit. The span may exceed MAX_MICROS (a
-- window can be longer): ceil_count, not ceil_micros.
local function need(curr, prev, k)
  if prev <= 0 then return 0 end
  local x = w * (1 - (limit - curr - k) / prev) -- ceil_count(x), inlined
  if not (x > 0) then return 0 end
  local f = x % 1 -- NaN for +inf, kept
  if f > 0 then return x - f + 1 end
  return x
end

-- remaining is the most a request at now could take without waiting: 0 while the state is
-- in a future window, else the largest r with need(curr, prev, r) ≤ now − start. It starts
-- from limit − curr − ceil(prev·(end − now)/window), the same in exact arithmetic, and
-- steps until it agrees with need, which rounding at an exact boundary may not.
local function remaining(win, curr, prev, now)
  local start = win * w
  if now < start or curr >= limit then return 0 end
  -- Without a previous count (or a NaN one) need is 0 for any r: all the rest fits.
  if not (prev > 0) then return limit - curr end
  local weighted = prev * (start + w - now) / w
  local r = limit - curr - ceil_count(weighted)
  if r < 0 then r = 0 end
  if r > limit - curr then r = limit - curr end
  local elapsed = now - start
  while r > 0 and need(curr, prev, r) > elapsed do r = r - 1 end
  while r < limit - curr and need(curr, prev, r + 1) <= elapsed do r = r + 1 end
  return r
end

-- view returns the counters as seen from window cur: shifted forward when cur is later
-- than the state's window; a state in a future window (reservations) is kept as it is.
local function view(cur)
  if not valid or s_win < cur - 1 then return cur, 0, 0 end
  if s_win == cur - 1 then return cur, 0, s_curr end
  return s_win, s_curr, s_prev
end

-- fit returns the earliest instant ≥ from inside window win at which k more permits fit,
-- or nil when none does.
local function fit(win, curr, prev, k, from)
  local start = win * w
  if curr > limit - k then return nil end
  local t = from -- math.max(from, start, start + need(...)), inlined
  if start > t then t = start end
  local e = start + need(curr, prev, k)
  if e > t then t = e end
  if t >= start + w then return nil end
  return t
end

-- place returns the earliest instant ≥ from at which k permits (at most limit) fit beside
-- the counters of window win, trying that window, then the next (prev := curr), then the
-- one after (empty), and the counters of the window they fit in.
local function place(win, curr, prev, k, from)
  local t = fit(win, curr, prev, k, from)
  if t then return t, win, curr, prev end
  t = fit(win + 1, 0, curr, k, from)
  if t then return t, win + 1, 0, curr end
  return (win + 2) * w, win + 2, 0, 0
end

-- reset is the time in µs until both counters have left the sliding window. With both at
-- zero in a future window (its reservations were refunded) the state is fresh once that
-- window has begun.
local function reset(win, curr, prev, now)
  if curr > 0 then return (win + 2) * w - now end
  if prev > 0 then return (win + 1) * w - now end
  local r = win * w - now
  if r > 0 then return r end
  return 0
end

-- decide runs on every call (the helpers above, in a library, once when it loads).
local function decide()
limit = config_nums[ARGV[5]] or config_num(ARGV[5])
w = config_nums[ARGV[6]] or config_num(ARGV[6])

valid, s_win, s_curr, s_prev = false, 0, 0, 0
-- get_state(KEYS[1], 25, 67) and the unpack, inlined (see not_state): p_win, p_curr and
-- p_prev are the fields of a state of this format, else nil.
local v, tag, p_win, p_curr, p_prev = redis.pcall('GET', KEYS[1])
if v and #v == 29 and ssub(v, 26) == STATE_END then tag, p_win, p_curr, p_prev = sunpack('<Bddd', v) end
if tag == 67 then -- "C"
  valid, s_win, s_curr, s_prev = true, p_win, p_curr, p_prev
elseif not_state(v) then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'win', 'curr', 'prev')
  if st[1] and st[2] and st[3] then
    valid, s_win, s_curr, s_prev = true, tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
  end
end

local cur = now / w -- floor_div(now, w), inlined
local f = cur % 1
if f == f then cur = cur - f end

if charging and n > 0 then
  -- SlidingWindowCounter.charge: n counted in the window of the state's view whatever the
  -- estimate is, at most 2^53.
  local win, curr, prev = view(cur)
  if curr > MAX_EXACT - n then curr = MAX_EXACT else curr = curr + n end
  local r = reset(win, curr, prev, now) -- > 0: curr > 0
  put_state(KEYS[1], spack('<Bddd', 67, win, curr, prev), r)
  -- RetryAfter: when apply places one permit with no wait.
  local t = place(win, curr, prev, 1, now)
  local at = win * w
  if now > at then at = now end
  return {1, limit, remaining(win, curr, prev, now), retry_after(t - now, 0), dur(r), 0, at}
end

-- The grant in the window of the state's view (the commonest decision) is the hot path:
-- straight line, calling only need and remaining (the reply's Remaining), as in
-- fixed_window.lua; any other case falls through to the general code below, which decides
-- it from the start.
if op == 'apply' and n <= limit and n > 0 then
  local win, curr, prev = cur, 0, 0 -- view(cur), above
  if valid and not (s_win < cur - 1) then
    if s_win == cur - 1 then prev = s_curr else win, curr, prev = s_win, s_curr, s_prev end
  end
  local start = win * w
  if not (curr > limit - n) then -- fit(win, curr, prev, n, now), above
    local t = now -- math.max(now, start, start + need(...)), inlined
    if start > t then t = start end
    if prev > 0 then -- else need is 0
      local e = start + need(curr, prev, n)
      if e > t then t = e end
    end
    local wait = t - now
    if t < start + w and wait <= max_wait then
      curr = curr + n
      local r = (win + 2) * w - now -- reset(win, curr, prev, now): curr > 0
      local s = spack('<Bddd', 67, win, curr, prev)
      -- A key of this format already counting grants in window win expires when win + 1
      -- ends: every write since the first grant in win set that TTL (a refund of all of
      -- them sets another). See put_state_kept, inlined here.
      if p_win == win and p_curr > 0 and server_time and has_keepttl then
        redis.call('SET', KEYS[1], s .. STATE_END, 'KEEPTTL')
      else
        put_state(KEYS[1], s, r)
      end
      -- dur, inlined: r > 0, and wait is in [0, max_wait]
      if r > MAX_MICROS then r = MAX_MICROS end
      -- remaining(win, curr, prev, now), called only when prev counts
      local rem = 0
      if not (now < start or curr >= limit) then
        if prev > 0 then rem = remaining(win, curr, prev, now) else rem = limit - curr end
      end
      return {1, limit, rem, 0, r, wait, t}
    end
  end
end

if op == 'apply' then
  local win, curr, prev = view(cur)
  if n > limit or n <= 0 then
    return {0, limit, remaining(win, curr, prev, now), MAX_MICROS, dur(reset(win, curr, prev, now)), 0, 0}
  end
  local t
  t, win, curr, prev = place(win, curr, prev, n, now)
  local wait = t - now
  if wait > max_wait then
    win, curr, prev = view(cur)
    return {0, limit, remaining(win, curr, prev, now), retry_after(wait, max_wait), dur(reset(win, curr, prev, now)), 0, 0}
  end
  curr = curr + n
  local r = reset(win, curr, prev, now) -- > 0: curr > 0
  local s = spack('<Bddd', 67, win, curr, prev)
  -- A key of this format already counting grants in window win expires when win + 1 ends:
  -- every write since the first grant in win set that TTL (a refund of all of them sets
  -- another). See put_state_kept.
  if not (v ~= true and valid and s_win == win and s_curr > 0 and put_state_kept(KEYS[1], s)) then
    put_state(KEYS[1], s, r)
  end
  return {1, limit, remaining(win, curr, prev, now), 0, dur(r), dur(wait), t}
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
  put_state(KEYS[1], spack('<Bddd', 67, s_win, curr, prev), reset(s_win, curr, prev, now)) -- kept: see keep
  return 0
end
return redis.error_reply('sliding-counter: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
