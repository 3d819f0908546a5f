-- Smooth bursty: the Lua twin of algo.SmoothBursty (smooth_bursty.go and smooth.go), run
-- after prelude.lua and smooth.lua (the functions shared with smooth_warming_up.lua).
-- Guava's SmoothRateLimiter.SmoothBursty, with the same double operations in the same
-- order as the Go transition, so Redis and the local store (and Guava) give the same waits
-- to the microsecond.
--
-- KEYS[1]  string "B" stored next rate burst (get_state of the base: a tag byte, then
--          doubles packed little-endian, 33 bytes): stored = storedPermits, next =
--          nextFreeTicket (µs), rate and burst = the config the state was last brought up
--          to date with (rate may be inf). No key: a new limiter (empty, next = now). A
--          hash of the same fields (the format of earlier versions, printed with %.17g)
--          is still read, and rewritten in this one by the next write.
-- ARGV[5]  rate, permits per second (double, %.17g, or +Inf)
-- ARGV[6]  burst, MaxBurstSeconds (double, %.17g, already normalized: 0 sent as 1)
--
-- TTL: until the stored permits are full again, plus one minute (LINGER): a forgotten key
-- restarts empty, so it must not be forgotten while its saved-up burst is likely wanted.

-- decide runs on every call (see scripts.go).
local function decide()
local cfg_rate = config_num(ARGV[5])
local cfg_burst = config_num(ARGV[6])

-- params derives Guava's quantities from a config (doSetRate): interval is
-- stableIntervalMicros, max is maxPermits, cool is coolDownIntervalMicros.
local function params(rate, burst)
  if rate == math.huge then return {inf = true, interval = 0, max = math.huge, cool = 0} end
  local interval = 1000000 / rate
  return {inf = false, interval = interval, max = burst * rate, cool = interval}
end

local valid, s_rate, s_burst = false, 0, 0
local v = get_state(KEYS[1], 33, 66) -- 66: "B"
if v == true then -- the previous format
  local h = redis.call('HMGET', KEYS[1], 'stored', 'next', 'rate', 'burst')
  valid = h[1] and h[2] and h[3] and h[4] and true or false
  if valid then
    s_stored, s_next, s_rate, s_burst = tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  end
elseif v then
  valid = true
  local _
  _, s_stored, s_next, s_rate, s_burst = struct.unpack('<Bdddd', v)
end

local function save(reset)
  store(struct.pack('<Bdddd', 66, s_stored, s_next, s_rate, s_burst), reset)
end

if op == 'refund' then return 0 end -- Guava cannot give permits back
if op ~= 'apply' then return redis.error_reply('smooth-bursty: unknown operation ' .. tostring(op)) end

local p = params(cfg_rate, cfg_burst)
local changed = false
if not valid then
  s_stored, s_next, s_rate, s_burst = 0, now, cfg_rate, cfg_burst
  changed = true
elseif s_rate ~= cfg_rate or s_burst ~= cfg_burst then
  local old = params(s_rate, s_burst)
  resync(now, old)
  rescale(old, p)
  s_rate, s_burst = cfg_rate, cfg_burst
  changed = true
end
return answer(p, changed, save)
end

return serve(twin(decide))
