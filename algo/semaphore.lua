-- Semaphore: the Lua twin of algo.SemaphoreState (semaphore.go), one script for every
-- operation. Same rules as the Go reference; see Semaphore.Script for the calling
-- convention:
--
-- KEYS[1]  holders: sorted set token → lease expiry (µs)
-- KEYS[2]  queue: sorted set token → ticket (fair mode)
-- KEYS[3]  queue expiries: sorted set token → expiry of the token's place (µs)
-- KEYS[4]  the last ticket handed out (INCR)
-- ARGV[1]  "acquire" | "release" | "renew" | "holders"
-- ARGV[2]  now, µs since the Unix epoch, or "" for the server's TIME, or "now pad" (TTLs + pad µs)
-- ARGV[3]  token
-- ARGV[4]  queue TTL in µs (acquire; 0: do not queue)
-- ARGV[5]  permits, ARGV[6] lease TTL in µs, ARGV[7] fair (1) or not (0)
--
-- Why a script, and why these keys: the well-known recipe (ZREMRANGEBYSCORE, ZADD, ZRANK,
-- ZREM in a MULTI pipeline) decides on the client between round trips, timestamps leases
-- with each client's clock, and in its fair variant cleans the timeout set into the wrong
-- key, so stale owners pile up in the set that is counted. Here every operation runs
-- atomically on the server, "now" is the server's TIME unless the caller sends its own,
-- expiries are absolute instants, and each operation first removes the expired holders
-- and waiters from the very sets it then counts. Q and QE always hold the same tokens.
--
-- Units and precision: instants and durations are integers of µs, tickets are integers,
-- all below 2^53 and so exact in a Lua double; they are sent to Redis with num (the base's:
-- no exponent). Each key written gets a PEXPIRE equal to its latest expiry (ttl_ms of the
-- base: plus the padding of ARGV[2], at least 2 ms), so a semaphore nobody touches any
-- more disappears by itself.
--
-- The base (internal/luawire/base.lua) comes before this file: read_now, ttl_ms, num.

-- call answers one call (serve of the base sets KEYS, ARGV and redis first).
local function call()
local H, Q, QE, N = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = read_now(ARGV[2])
local op = ARGV[1]
local token = ARGV[3]
local qttl = tonumber(ARGV[4]) or 0
local permits = tonumber(ARGV[5]) or 0
local ttl = tonumber(ARGV[6]) or 0
local fair = ARGV[7] == '1'

-- ms is the PEXPIRE of a key whose latest expiry is us µs away.
local function ms(us) return num(ttl_ms(us)) end

-- expire_holders sets H's TTL to its latest lease; an empty H no longer exists.
local function expire_holders()
  local last = redis.call('ZRANGE', H, -1, -1, 'WITHSCORES')
  if #last == 0 then return end
  redis.call('PEXPIRE', H, ms(tonumber(last[2]) - now))
end

-- expire_queue sets the queue keys' TTL to the latest place, or deletes all three
-- (the ticket counter too: tickets restart at 1) when nobody waits.
local function expire_queue()
  local last = redis.call('ZRANGE', QE, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', Q, QE, N)
    return
  end
  local m = ms(tonumber(last[2]) - now)
  redis.call('PEXPIRE', Q, m)
  redis.call('PEXPIRE', QE, m)
  redis.call('PEXPIRE', N, m)
end

-- cleanup forgets the leases and queue places that expired (expiry ≤ now); the keys'
-- TTLs stay valid, since their latest expiry is unchanged.
local function cleanup()
  redis.call('ZREMRANGEBYSCORE', H, '-inf', num(now))
  local dead = redis.call('ZRANGEBYSCORE', QE, '-inf', num(now))
  if #dead == 0 then return end
  for i = 1, #dead, 1000 do -- unpack has a stack limit
    redis.call('ZREM', Q, unpack(dead, i, math.min(i + 999, #dead)))
  end
  redis.call('ZREMRANGEBYSCORE', QE, '-inf', num(now))
  if redis.call('EXISTS', Q) == 0 then redis.call('DEL', N) end
end

-- leave removes token from the queue, if it is there.
local function leave()
  if redis.call('ZREM', Q, token) == 1 then
    redis.call('ZREM', QE, token)
    expire_queue()
  end
end

-- set_lease gives token a lease until exp, or until its current expiry if later.
local function set_lease(exp)
  local cur = redis.call('ZSCORE', H, token)
  if cur and tonumber(cur) > exp then exp = tonumber(cur) end
  redis.call('ZADD', H, num(exp), token)
  expire_holders()
end

if op == 'acquire' then
  cleanup()
  if redis.call('ZSCORE', H, token) then
    -- Already a holder (a retried call whose reply was lost): extend, take nothing more.
    set_lease(now + ttl)
    leave()
    return {1, redis.call('ZCARD', H), 0, 0}
  end
  local held = redis.call('ZCARD', H)
  local free = permits - held
  local rank, queued = 0, false
  if fair then
    local r = redis.call('ZRANK', Q, token)
    if r then
      rank, queued = r, true
    else
      rank = redis.call('ZCARD', Q) -- a newcomer would queue behind everybody
    end
  end
  if rank < free then
    set_lease(now + ttl)
    if queued then leave() end
    return {1, held + 1, 0, 0}
  end
  if fair then
    if qttl > 0 then
      local exp = now + qttl
      if queued then
        local cur = tonumber(redis.call('ZSCORE', QE, token))
        if cur > exp then exp = cur end
      else
        redis.call('ZADD', Q, redis.call('INCR', N), token)
      end
      redis.call('ZADD', QE, num(exp), token)
      expire_queue()
    elseif queued then
      leave()
    end
  end
  local retry = 0
  if held > 0 then
    local first = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
    retry = tonumber(first[2]) - now
  end
  return {0, held, rank, retry}
elseif op == 'release' then
  cleanup()
  leave()
  local removed = redis.call('ZREM', H, token)
  if removed == 1 then expire_holders() end
  return removed
elseif op == 'renew' then
  cleanup()
  if not redis.call('ZSCORE', H, token) then return 0 end
  set_lease(now + ttl)
  return 1
elseif op == 'holders' then
  cleanup()
  return redis.call('ZCARD', H)
end
return redis.error_reply('semaphore: unknown operation ' .. tostring(op))
end

return serve(call)
