-- Smooth warming up: the Lua twin of algo.SmoothWarmingUp (smooth_warming_up.go and
-- smooth.go), run after prelude.lua. Guava's SmoothRateLimiter.SmoothWarmingUp, with the
-- same double operations in the same order as the Go transition, so Redis and the local
-- store (and Guava) give the same waits to the microsecond.
--
-- KEYS[1]  hash: stored = storedPermits (double, %.17g), next = nextFreeTicket (µs),
--          rate, warmup, cold = the config the state was last brought up to date with
--          (rate and cold doubles, %.17g, rate may be inf; warmup in µs). No key: a new
--          limiter, cold (stored = maxPermits, next = now).
-- ARGV[5]  rate, permits per second at full speed (double, %.17g, or +Inf)
-- ARGV[6]  warmup in whole µs
-- ARGV[7]  cold factor (double, %.17g, already normalized: 0 sent as 3)
--
-- TTL: until the key is cold again (then it equals a new one and the key is deleted); a key
-- whose rate is +Inf is kept one minute longer (LINGER): Guava restarts it hot.

local LINGER = 60000000
local cfg_rate = tonumber(ARGV[5])
local cfg_warmup = tonumber(ARGV[6])
local cfg_cold = tonumber(ARGV[7])

-- params derives Guava's quantities from a config (doSetRate): interval is
-- stableIntervalMicros, threshold is thresholdPermits, max is maxPermits, cool is
-- coolDownIntervalMicros. A warmup of 0 gives max 0 and a cool of 0/0 that is never used.
local function params(rate, warmup, cold)
  if rate == math.huge then return {inf = true, interval = 0, max = math.huge, cool = 0, threshold = 0, slope = 0} end
  local interval = 1000000 / rate
  local cold_interval = interval * cold
  local threshold = 0.5 * warmup / interval
  local mx = threshold + 2.0 * warmup / (interval + cold_interval)
  local slope = 0
  if mx > threshold then slope = (cold_interval - interval) / (mx - threshold) end
  return {inf = false, interval = interval, max = mx, cool = warmup / mx, threshold = threshold, slope = slope}
end

local h = redis.call('HMGET', KEYS[1], 'stored', 'next', 'rate', 'warmup', 'cold')
local valid = h[1] and h[2] and h[3] and h[4] and h[5] and true or false
local s_stored, s_next, s_rate, s_warmup, s_cold = 0, 0, 0, 0, 0
if valid then
  s_stored, s_next = tonumber(h[1]), tonumber(h[2])
  s_rate, s_warmup, s_cold = tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
end

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
-- special cases for an old maxPermits of +Inf (hot) and of 0 (cold).
local function rescale(old, p)
  if old.inf then
    s_stored = 0
  elseif old.max == 0 then
    if p.inf then s_stored = 0 else s_stored = p.max end
  elseif p.inf then
    s_stored = 0
  else
    s_stored = s_stored * p.max / old.max
  end
end

-- permits_to_time is the interval at x permits above the threshold.
local function permits_to_time(p, x) return p.interval + x * p.slope end

-- stored_cost is storedPermitsToWaitTime(stored, k): the trapezoid above the threshold
-- and the rectangle below, each truncated to whole µs.
local function stored_cost(p, stored, k)
  if p.inf then return 0 end
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

local function reset_after(t, p)
  local reset = s_next - t
  if reset < 0 then reset = 0 end
  if not p.inf and p.max > 0 and s_stored < p.max then reset = reset + until_full(p) end
  if p.inf then reset = reset + LINGER end
  return reset
end

local function save(reset)
  if reset > 0 then
    redis.call('HSET', KEYS[1], 'stored', num(s_stored), 'next', num(s_next),
      'rate', num(s_rate), 'warmup', num(s_warmup), 'cold', num(s_cold))
  end
  expire(reset)
end

if op == 'refund' then return 0 end -- Guava cannot give permits back
if op ~= 'apply' then return redis.error_reply('smooth-warmup: unknown operation ' .. tostring(op)) end

local p = params(cfg_rate, cfg_warmup, cfg_cold)
local changed = false
if not valid then
  s_next, s_rate, s_warmup, s_cold = now, cfg_rate, cfg_warmup, cfg_cold
  if p.inf then s_stored = 0 else s_stored = p.max end
  changed = true
elseif s_rate ~= cfg_rate or s_warmup ~= cfg_warmup or s_cold ~= cfg_cold then
  local old = params(s_rate, s_warmup, s_cold)
  resync(now, old)
  rescale(old, p)
  s_rate, s_warmup, s_cold = cfg_rate, cfg_warmup, cfg_cold
  changed = true
end
local limit = limit_of(p)

if not (n > 0) or n > MAX_EXACT then
  -- Never granted; a config change (or a new key) is still written.
  if changed then save(reset_after(now, p)) end
  resync(now, p) -- for the reply only
  return {0, limit, remaining(now, p), MAX_MICROS, dur(reset_after(now, p)), 0, 0}
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
