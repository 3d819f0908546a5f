-- GCRA: the Lua twin of algo.GCRA (gcra.go), run after prelude.lua. Same state, same
-- operations in the same order as the Go transition.
--
-- KEYS[1]  string "G" tat act iv rb last burst (get_state of the base: a tag byte, then
--          doubles packed little-endian, 49 bytes): tat = the theoretical arrival time in
--          µs, act = µs at which the latest grant acts (x/time/rate's lastEvent), iv = the
--          interval T the TAT was written under, rb = 1 while every outstanding grant acts
--          n·T after the one before (act may roll back), else 0, last = µs of the last
--          write, from which a rate change is counted, burst = the burst of the last write
--          (a change moves the TAT by the difference, keeping the permits available). No
--          key: an idle key (TAT = now). A hash of the same fields (the format of earlier
--          versions) is still read, and rewritten in this one by the next write; in the
--          oldest such keys fields are missing: iv = the current T, act = a refund gives
--          nothing back until the key's next grant, last = 0, burst = the current one.
-- ARGV[5]  rate, permits per second (double, %.17g); the emission interval is
--          T = ceil(1e6/rate) whole µs (GCRA.Validate keeps rate ≤ 1e6/s, so T ≥ 1)
-- ARGV[6]  burst, permits that may arrive at once and the largest N (integer ≤ 2^53;
--          burst·T ≤ 1e15)
--
-- T, now and so the TAT are whole µs below 2^53: every sum and difference is exact.
-- TTL: the time until TAT, when the key is idle.

-- The call's config and stored state, which the helpers below read: set at the start of
-- every call, so that a function library makes the helpers once (closures made on every
-- call cost Redis more than the rest of a decision's Lua).
local T, burst, valid, s_tat, s_iv, s_last, s_burst

-- tat_at returns the key's TAT, never earlier than t. A TAT written under another interval
-- is rescaled to T, the time since the last write counted at the lower of the two rates:
-- with a longer T the permits held at the last write are spaced by T from then, with a
-- shorter one those still held at t from t (rounded up to whole µs, bounded so that the
-- TAT stays exact), as in algo.GCRA.tat.
local function tat_at(t)
  if not valid then return t end
  local tat = s_tat
  if s_iv ~= T and s_tat > s_last then
    local from = t
    if T > s_iv or from < s_last then from = s_last end
    if s_tat > from then
      tat = from + math.ceil((s_tat - from) / s_iv * T)
      local top = t + MAX_MICROS + burst * T
      if tat > top then tat = top end -- already a wait of MAX_MICROS or more
    end
  end
  -- A burst change keeps the permits available (burst − ahead/T): the TAT moves by the
  -- difference, unless the key is idle (fresh: expired).
  if s_burst ~= burst and tat > t then tat = tat + (burst - s_burst) * T end
  if tat > t then return tat end
  return t
end

-- remaining is how many single permits fit while the TAT is ahead µs ahead of now:
-- (burst·T - ahead)/T rounded down.
local function remaining(ahead)
  return floor_count((burst * T - ahead) / T)
end

-- until_fresh is the ResetAfter at now of a decision that writes nothing, as
-- algo.GCRA.untilFresh: while a raised rate is not yet written, ahead shrinks at the old
-- rate, and the state is fresh only once its stored TAT has passed.
local function until_fresh(ahead, now)
  if valid and T < s_iv and s_tat - now > ahead then return ceil_micros(s_tat - now) end
  return ceil_micros(ahead)
end

-- decide runs on every call (the helpers above, in a library, once when it loads).
local function decide()
local rate = config_nums[ARGV[5]] or config_num(ARGV[5])
burst = config_nums[ARGV[6]] or config_num(ARGV[6])
T = math.ceil(1e6 / rate)

-- s_act nil: not known; s_rb: the latest grant acts n·T after the one before it, so its
-- refund may roll act back; s_last: µs of the last write; s_burst: its burst
valid, s_tat, s_iv, s_last, s_burst = false, 0, T, 0, burst
local s_act, s_rb = nil, false
-- get_state(KEYS[1], 49, 71) and the unpack, inlined (see not_state)
local v, tag, f1, f2, f3, f4, f5, f6 = redis.pcall('GET', KEYS[1])
if v and #v == 53 and ssub(v, 50) == STATE_END then tag, f1, f2, f3, f4, f5, f6 = sunpack('<Bdddddd', v) end
if tag == 71 then -- "G"
  valid, s_tat, s_act, s_iv, s_rb, s_last, s_burst = true, f1, f2, f3, f4 == 1, f5, f6
elseif not_state(v) then -- the previous format
  local st = redis.call('HMGET', KEYS[1], 'tat', 'act', 'iv', 'rb', 'last', 'burst')
  valid = st[1] and true or false -- false for a missing field
  s_tat = valid and tonumber(st[1]) or 0
  s_act = valid and st[2] and tonumber(st[2]) or nil
  s_iv = valid and st[3] and tonumber(st[3]) or T
  s_rb = st[4] == '1'
  s_last = valid and st[5] and tonumber(st[5]) or 0
  s_burst = valid and st[6] and tonumber(st[6]) or burst
end

if op == 'apply' then
  -- Behind a clock that stepped back before the last write, under another interval or
  -- burst, the decision is made at the write's instant, lag ahead (as algo.GCRA.Apply).
  local lag, from = 0, now
  if valid and now < s_last and (s_iv ~= T or s_burst ~= burst) then
    lag = s_last - now
    now = s_last
  end
  local tat = tat_at(now)
  if charging then
    -- GCRA.charge: the TAT moves n·T past max(TAT, now) whatever is left (debt), capped
    -- at now + MAX_MICROS + burst·T (never granted, and exact); act kept, rb ended.
    tat = tat + n * T
    local top = now + MAX_MICROS + burst * T
    if tat > top then tat = top end
    local act = now
    if valid and s_act and s_act > now then act = s_act end
    -- counted from the caller's now (from), which the state as written decides with no lag
    local ahead = tat - from
    local reset = ceil_micros(ahead)
    store(spack('<Bdddddd', 71, tat, act, T, 0, now, burst), reset)
    return {1, burst, remaining(ahead), retry_after(ceil_micros(ahead - (burst - 1) * T), 0), dur(reset), 0, now}
  end
  local ahead = tat - now -- ≥ 0, and exact
  if n > burst or n <= 0 then
    return {0, burst, remaining(ahead), MAX_MICROS, dur(lag + until_fresh(ahead, now)), 0, 0}
  end
  -- N fits once ahead has come down to (burst - N)·T.
  local wait = ceil_micros(ahead - (burst - n) * T)
  local delay = wait -- from the caller's now
  if wait > 0 then delay = lag + wait end
  if delay > max_wait then
    return {0, burst, remaining(ahead), retry_after(lag + wait, max_wait), dur(lag + until_fresh(ahead, now)), 0, 0}
  end
  local new_tat = tat + n * T
  local act = now + wait
  -- rb as in the Go twin: every outstanding grant spaced by its n·T
  local rb = ((not valid) or (not s_act) or s_rb or s_act <= now) and act - n * T >= (s_act or 0)
  if s_act and s_act >= act then act, rb = s_act, false end -- never moves back
  ahead = new_tat - now
  local reset = lag + ceil_micros(ahead)
  store(spack('<Bdddddd', 71, new_tat, act, T, rb and 1 or 0, now, burst), reset)
  return {1, burst, remaining(ahead), 0, dur(reset), dur(delay), now + wait}
elseif op == 'refund' then
  -- Gives back what x/time/rate's CancelAt does: n·T minus the span reserved after the
  -- grant (act − at), never below zero; the latest grant's refund moves act back.
  if not valid or not s_act or not (n > 0) then return 0 end
  local span = s_act - grant_at
  if span < 0 then span = 0 end
  local back = n * T - span
  if not (back > 0) then return 0 end
  local tat = tat_at(now) - back
  if tat < now then tat = now end -- kept even when idle: see keep
  local act, rb = s_act, s_rb
  if grant_at == s_act and s_rb then
    local prev = grant_at - n * T
    if prev >= now then act = prev end
  else
    rb = false
  end
  if tat == s_tat and act == s_act and s_iv == T and rb == s_rb and s_last == now and s_burst == burst then
    return 0 -- nothing to write
  end
  put_state(KEYS[1], spack('<Bdddddd', 71, tat, act, T, rb and 1 or 0, now, burst),
    ceil_micros(tat - now)) -- kept: see keep
  return 0
end
return redis.error_reply('gcra: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
