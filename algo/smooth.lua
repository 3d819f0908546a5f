-- Smooth: what smooth_bursty.lua and smooth_warming_up.lua share, as smooth.go does for
-- their Go transitions. smooth_scripts.go puts it after prelude.lua and before either file.
-- Every function repeats smooth.go's double operations in the same order, so Redis and the
-- local store (and Guava) give the same waits to the microsecond.
--
-- The state (s_stored, s_next) is declared here and read from KEYS[1] by each file, which
-- also keeps the config fields and supplies params(...): a table {inf, interval, max, cool}
-- as Guava's doSetRate derives it, with warm = true, threshold and slope for SmoothWarmingUp
-- (warm is nil for SmoothBursty, like smoothParams.warm).

local LINGER = 60000000 -- smoothLinger, µs
local s_stored, s_next = 0, 0 -- storedPermits (double) and nextFreeTicket (µs)

-- trunc_micros is Java's (long) cast of a non-negative double, saturated at MAX_MICROS.
local function trunc_micros(x)
  if not (x > 0) then return 0 end
  if x >= MAX_MICROS then return MAX_MICROS end
  return math.floor(x)
end

-- resync: idle time since next becomes stored permits (capped), and next moves to t.
local function resync(t, p)
  if t <= s_next then return end
  if p.inf then
    s_stored = 0
  elseif p.max > 0 then
    local x = s_stored + (t - s_next) / p.cool
    if x > p.max then x = p.max end
    s_stored = x
  end
  s_next = t
end

-- rescale is the rest of doSetRate: keep the proportion of maxPermits, with Guava's
-- special cases for an old maxPermits of +Inf (bursty: full, warming up: hot) and of 0
-- (bursty: empty, warming up: cold).
local function rescale(old, p)
  if old.inf then
    if p.warm or p.inf then s_stored = 0 else s_stored = p.max end
  elseif old.max == 0 then
    if p.warm and not p.inf then s_stored = p.max else s_stored = 0 end
  elseif p.inf then
    s_stored = 0
  else
    s_stored = s_stored * p.max / old.max
  end
end

-- permits_to_time is the interval at x permits above the threshold (warming up).
local function permits_to_time(p, x) return p.interval + x * p.slope end

-- stored_cost is storedPermitsToWaitTime(stored, k): 0 for SmoothBursty; for
-- SmoothWarmingUp the trapezoid above the threshold and the rectangle below, each
-- truncated to whole µs.
local function stored_cost(p, stored, k)
  if not p.warm or p.inf then return 0 end
  local micros = 0
  local above = stored - p.threshold
  if above > 0 then
    local take = k
    if above < k then take = above end
    local length = permits_to_time(p, above) + permits_to_time(p, above - take)
    micros = trunc_micros(take * length / 2.0)
    k = k - take
  end
  return micros + trunc_micros(p.interval * k)
end

-- reserve spends n permits: stored ones cost stored_cost, fresh ones interval each.
local function reserve(t, req, p)
  local spend = req
  if s_stored < req then spend = s_stored end
  local fresh = req - spend
  local cost = stored_cost(p, s_stored, spend) + trunc_micros(fresh * p.interval)
  if cost > MAX_MICROS then cost = MAX_MICROS end
  s_next = s_next + cost
  if s_next > t + MAX_MICROS then s_next = t + MAX_MICROS end
  s_stored = s_stored - spend
end

local function limit_of(p)
  if p.inf or p.max >= MAX_EXACT then return MAX_EXACT end
  local l = math.ceil(p.max)
  if l > 0 then return l end
  return 1
end

local function remaining(t, p)
  if s_next > t then return 0 end
  if p.inf then return MAX_EXACT end
  return floor_count(s_stored)
end

-- until_full is the least whole d (µs of idleness after next) for which resync fills the
-- state, as smoothState.untilFull computes it.
local function until_full(p)
  local x = (p.max - s_stored) * p.cool
  if not (x < MAX_MICROS) then return MAX_MICROS end
  local d = ceil_micros(x)
  local i = 0
  while i < 64 and d > 0 and s_stored + (d - 1) / p.cool >= p.max do d = d - 1; i = i + 1 end
  i = 0
  while i < 64 and not (s_stored + d / p.cool >= p.max) do d = d + 1; i = i + 1 end
  return d
end

-- reset_after: until the reservations are over and the state is full again, plus LINGER
-- for a SmoothBursty key (always) or a +Inf rate (either kind).
local function reset_after(t, p)
  local reset = s_next - t
  if reset < 0 then reset = 0 end
  if not p.inf and p.max > 0 and s_stored < p.max then reset = reset + until_full(p) end
  if not p.warm or p.inf then reset = reset + LINGER end
  return reset
end

-- answer is the rest of an apply once the state is up to date with p (changed: it must be
-- written even if nothing is granted): the Lua form of applySmooth's tail. save(reset)
-- writes the file's packed state and sets the TTL (or deletes a fresh one).
local function answer(p, changed, save)
  local limit = limit_of(p)

  if not (n > 0) or n > MAX_EXACT then
    -- Never granted; a config change (or a new key) is still written.
    if changed then save(reset_after(now, p)) end
    resync(now, p) -- for the reply only
    return {0, limit, remaining(now, p), MAX_MICROS, dur(reset_after(now, p)), 0, 0}
  end

  if charging then
    -- smoothState.charge: Guava's acquire(n) without its sleep; the next caller pays.
    resync(now, p)
    reserve(now, n, p)
    local reset = reset_after(now, p)
    save(reset)
    return {1, limit, remaining(now, p), dur(s_next - now), dur(reset), 0, now}
  end

  local wait = s_next - now
  if wait < 0 then wait = 0 end
  if wait > max_wait then
    -- Denied: nothing reserved (now < next, so resync would change nothing).
    local reset = reset_after(now, p)
    if changed then save(reset) end
    return {0, limit, 0, retry_after(wait, max_wait), dur(reset), 0, 0}
  end

  resync(now, p)
  reserve(now, n, p)
  local reset = reset_after(now, p)
  save(reset)
  return {1, limit, remaining(now, p), 0, dur(reset), wait, now + wait}
end
