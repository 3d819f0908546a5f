-- GCRA: the Lua twin of algo.GCRA (gcra.go), run after prelude.lua. Same state, same
-- operations in the same order as the Go transition.
--
-- KEYS[1]  hash: tat = the theoretical arrival time in µs (%.17g). No key: an idle key
--          (TAT = now).
-- ARGV[5]  rate, permits per second (double, %.17g); the emission interval is
--          T = ceil(1e6/rate) whole µs (GCRA.Validate keeps rate ≤ 1e6/s, so T ≥ 1)
-- ARGV[6]  burst, permits that may arrive at once and the largest N (integer ≤ 2^53;
--          burst·T ≤ 1e15)
--
-- T, now and so the TAT are whole µs below 2^53: every sum and difference is exact.
-- TTL: the time until TAT, when the key is idle.

local rate = tonumber(ARGV[5])
local burst = tonumber(ARGV[6])
local T = math.ceil(1e6 / rate)

local raw = redis.call('HGET', KEYS[1], 'tat') -- false when the key is missing
local valid = raw and true or false
local s_tat = valid and tonumber(raw) or 0

-- tat_at returns the key's TAT, never earlier than t.
local function tat_at(t)
  if valid and s_tat > t then return s_tat end
  return t
end

-- remaining is how many single permits fit while the TAT is ahead µs ahead of now:
-- (burst·T - ahead)/T rounded down.
local function remaining(ahead)
  return floor_count((burst * T - ahead) / T)
end

if op == 'apply' then
  local tat = tat_at(now)
  local ahead = tat - now -- ≥ 0, and exact
  if n > burst or n <= 0 then
    return {0, burst, remaining(ahead), MAX_MICROS, dur(ceil_micros(ahead)), 0, 0}
  end
  -- N fits once ahead has come down to (burst - N)·T.
  local wait = ceil_micros(ahead - (burst - n) * T)
  if wait > max_wait then
    return {0, burst, remaining(ahead), retry_after(wait, max_wait), dur(ceil_micros(ahead)), 0, 0}
  end
  local new_tat = tat + n * T
  redis.call('HSET', KEYS[1], 'tat', num(new_tat))
  ahead = new_tat - now
  local reset = ceil_micros(ahead)
  expire(reset)
  return {1, burst, remaining(ahead), 0, dur(reset), dur(wait), now + wait}
elseif op == 'refund' then
  if not valid or not (n > 0) then return 0 end
  local tat = s_tat - n * T
  if tat < now then tat = now end -- kept even when idle: see keep
  if tat == s_tat then return 0 end -- nothing to write
  redis.call('HSET', KEYS[1], 'tat', num(tat))
  keep(ceil_micros(tat - now))
  return 0
end
return redis.error_reply('gcra: unknown operation ' .. tostring(op))
