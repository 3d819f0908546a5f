-- Smooth warming up: the Lua twin of algo.SmoothWarmingUp (smooth_warming_up.go and
-- smooth.go), run after prelude.lua and smooth.lua (the functions shared with
-- smooth_bursty.lua). Guava's SmoothRateLimiter.SmoothWarmingUp, with the same double
-- operations in the same order as the Go transition, so Redis and the local store (and
-- Guava) give the same waits to the microsecond.
--
-- KEYS[1]  string "W" stored next rate warmup cold (get_state of the base: a tag byte,
--          then doubles packed little-endian, 41 bytes): stored = storedPermits, next =
--          nextFreeTicket (µs), rate, warmup, cold = the config the state was last brought
--          up to date with (rate may be inf; warmup in µs). No key: a new limiter, cold
--          (stored = maxPermits, next = now). A hash of the same fields (the format of
--          earlier versions, printed with %.17g) is still read, and rewritten in this one
--          by the next write.
-- ARGV[5]  rate, permits per second at full speed (double, %.17g, or +Inf)
-- ARGV[6]  warmup in whole µs
-- ARGV[7]  cold factor (double, %.17g, already normalized: 0 sent as 3)
--
-- TTL: until the key is cold again (then it equals a new one and the key is deleted); a key
-- whose rate is +Inf is kept one minute longer (LINGER): Guava restarts it hot.

-- decide runs on every call (see scripts.go).
local function decide()
local cfg_rate = config_num(ARGV[5])
local cfg_warmup = config_num(ARGV[6])
local cfg_cold = config_num(ARGV[7])

-- params derives Guava's quantities from a config (doSetRate): interval is
-- stableIntervalMicros, threshold is thresholdPermits, max is maxPermits, cool is
-- coolDownIntervalMicros. A warmup of 0 gives max 0 and a cool of 0/0 that is never used.
local function params(rate, warmup, cold)
  if rate == math.huge then return {warm = true, inf = true, interval = 0, max = math.huge, cool = 0, threshold = 0, slope = 0} end
  local interval = 1000000 / rate
  local cold_interval = interval * cold
  local threshold = 0.5 * warmup / interval
  local mx = threshold + 2.0 * warmup / (interval + cold_interval)
  local slope = 0
  if mx > threshold then slope = (cold_interval - interval) / (mx - threshold) end
  return {warm = true, inf = false, interval = interval, max = mx, cool = warmup / mx, threshold = threshold, slope = slope}
end

local valid, s_rate, s_warmup, s_cold = false, 0, 0, 0
local v = get_state(KEYS[1], 41, 87) -- 87: "W"
if v == true then -- the previous format
  local h = redis.call('HMGET', KEYS[1], 'stored', 'next', 'rate', 'warmup', 'cold')
  valid = h[1] and h[2] and h[3] and h[4] and h[5] and true or false
  if valid then
    s_stored, s_next = tonumber(h[1]), tonumber(h[2])
    s_rate, s_warmup, s_cold = tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
  end
elseif v then
  valid = true
  local _
  _, s_stored, s_next, s_rate, s_warmup, s_cold = struct.unpack('<Bddddd', v)
end

local function save(reset)
  store(struct.pack('<Bddddd', 87, s_stored, s_next, s_rate, s_warmup, s_cold), reset)
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
return answer(p, changed, save)
end

return serve(twin(decide))
