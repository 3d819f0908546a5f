-- Sliding window log: the Lua twin of algo.SlidingWindowLog (sliding_window_log.go), run
-- after prelude.lua. Same state and the same integer arithmetic as the Go transition.
--
-- KEYS[1]  hash: total = the sum of the N logged in KEYS[2].
-- KEYS[2]  list: one "T:N" entry per grant instant (T in µs, N permits, N ≥ 0), oldest
--          first; T strictly increases along the list. No keys: an empty log.
-- ARGV[5]  limit, permits per sliding window and the largest N (integer ≤ 2^53)
-- ARGV[6]  window length in µs (integer ≥ 1)
--
-- A grant at T counts in (T − window, T]. Entries that no longer count at now are skipped,
-- and forgotten only by a grant (whose entry is at or after now), as in Go: a denial
-- writes nothing. A refund that empties an entry removes it, except the newest, which
-- stays as "T:0" at its own instant, because it is the floor of every later grant. All
-- values are integers below 2^53, so the arithmetic is exact; "sum + N > limit" is
-- computed as "sum > limit - N", which cannot round. A charge logs N as a grant with no
-- wait is, whatever the window holds (the log holding at most 2^53), then merges the
-- entries before the newest run holding at least limit into the run's oldest entry, as
-- SlidingWindowLog.compact does. Entries are read with LRANGE in chunks of CHUNK. TTL:
-- until the newest entry has left the window.

-- decide runs on every call (see scripts.go).
local function decide()
local CHUNK = 64
local limit = config_num(ARGV[5])
local w = config_num(ARGV[6])
local HASH, LOG = KEYS[1], KEYS[2]

local len = redis.call('LLEN', LOG)
local total = redis.call('HGET', HASH, 'total')

-- parse splits a "T:N" entry.
local function parse(e)
  local c = string.find(e, ':', 1, true)
  return tonumber(string.sub(e, 1, c - 1)), tonumber(string.sub(e, c + 1))
end

local function entry(t, k) return num(t) .. ':' .. num(k) end

-- reset is the time in µs until the newest entry (at last_t; nil for an empty log) has
-- left the window.
local function reset(last_t)
  if not last_t then return 0 end
  return last_t + w - now
end

-- remaining is what a request at now could take without waiting: nothing while the newest
-- live entry (at live_last_t) is a reservation after now, else limit - sum.
local function remaining(live_last_t, sum)
  if live_last_t and live_last_t > now then return 0 end
  local r = limit - sum
  if r < 0 then r = 0 end
  return r
end

-- commit stores total and sets the TTL to the reset of the newest entry, at last_t (a log
-- that was written is never empty: a grant appends, a refund keeps the newest entry).
local function commit(last_t)
  redis.call('HSET', HASH, 'total', num(total))
  keep(reset(last_t))
end

-- The two keys are written and deleted together, but one may go alone (evicted under
-- maxmemory): the list is the truth, and total is recomputed from it when missing.
if len == 0 then
  total = 0
elseif total then
  total = tonumber(total)
else
  total = 0
  for i = 0, len - 1, CHUNK do
    for _, e in ipairs(redis.call('LRANGE', LOG, i, i + CHUNK - 1)) do
      local _, k = parse(e)
      total = total + k
    end
  end
end
local last_t, last_n -- the newest entry, live or not
if len > 0 then last_t, last_n = parse(redis.call('LINDEX', LOG, -1)) end

if op == 'apply' then
  -- head entries (summing sum_dead) no longer count at now: T ≤ now − window.
  -- first_k: the N of the first live entry.
  local head, sum_dead, first_k = 0, 0, 0
  while head < len do
    local chunk = redis.call('LRANGE', LOG, head, head + CHUNK - 1)
    local stop = false
    for i = 1, #chunk do
      local t, k = parse(chunk[i])
      if t > now - w then stop, first_k = true, k break end
      sum_dead = sum_dead + k
      head = head + 1
    end
    if stop or #chunk == 0 then break end
  end
  local live_total = total - sum_dead
  local live_last_t = nil
  if head < len then live_last_t = last_t end

  -- until_room drops the oldest live entries (from index i of the list, summing sum)
  -- until the rest sum to at most bound, and returns the later of t and the instant the
  -- last dropped entry leaves the window.
  local function until_room(sum, i, bound, t)
    while sum > bound and i < len do
      local chunk = redis.call('LRANGE', LOG, i, i + CHUNK - 1)
      if #chunk == 0 then break end -- total disagrees with the log: never loop forever
      for j = 1, #chunk do
        if not (sum > bound) then break end
        local et, ek = parse(chunk[j])
        sum = sum - ek
        if et + w > t then t = et + w end
      end
      i = i + #chunk
    end
    return t
  end

  if charging and n > 0 then
    -- SlidingWindowLog.charge: n logged at now, or at the newest entry if it is later,
    -- whatever the window holds; the log holds at most 2^53 permits.
    local t = now
    if live_last_t and live_last_t > t then t = live_last_t end
    local k = n
    if k > MAX_EXACT - live_total then k = MAX_EXACT - live_total end
    if head > 0 then redis.call('LTRIM', LOG, head, -1) end
    len, total = len - head, live_total + k
    if live_last_t == t then
      redis.call('LSET', LOG, -1, entry(t, last_n + k))
    else
      redis.call('RPUSH', LOG, entry(t, k))
      len = len + 1
    end
    -- SlidingWindowLog.compact: the entries before the newest run holding at least limit
    -- are merged into the run's oldest entry (read from the newest end, as in refund).
    -- None is unless the entries after the first hold limit (with two entries or more,
    -- the first is the first live one before the charge).
    local run, hi = 0, len - 1
    if hi < 1 or total - first_k < limit then hi = 0 end
    while hi >= 1 do
      local lo = hi - CHUNK + 1
      if lo < 1 then lo = 1 end
      local chunk = redis.call('LRANGE', LOG, lo, hi)
      hi = lo - 1
      for j = #chunk, 1, -1 do
        local et, ek = parse(chunk[j])
        run = run + ek
        if run >= limit then
          local idx = lo + j - 1
          redis.call('LTRIM', LOG, idx, -1)
          -- total - run first: ek + total could pass 2^53 and round
          redis.call('LSET', LOG, 0, entry(et, ek + (total - run)))
          len, hi = len - idx, 0
          break
        end
      end
    end
    commit(t)
    -- RetryAfter: when apply grants one permit with no wait; the newest entry is at t.
    local ra = retry_after(until_room(total, 0, limit - 1, t) - now, 0)
    return {1, limit, remaining(t, total), ra, dur(reset(t)), 0, t}
  end

  if n > limit or n <= 0 then
    return {0, limit, remaining(live_last_t, live_total), MAX_MICROS, dur(reset(last_t)), 0, 0}
  end
  -- The log holds at most 2^53 permits, so that total stays exact in doubles: a request
  -- that would exceed it waits, unreserved, until enough entries have left the window.
  -- "sum > MAX_EXACT - n" cannot round: both sides are integers in [0, 2^53].
  local t = now
  if live_last_t and live_last_t > t then t = live_last_t end
  -- Drop the oldest live entries until the rest leaves room for N; the grant can happen
  -- once the last dropped entry has left the window.
  t = until_room(live_total, head, limit - n, t)
  local wait = t - now
  if live_total > MAX_EXACT - n then
    -- Denied until enough entries have left the window at its now, and, as any request,
    -- until its wait fits max_wait.
    local ra = dur(until_room(live_total, head, MAX_EXACT - n, now) - now)
    local rw = retry_after(wait, max_wait)
    if rw > ra then ra = rw end
    return {0, limit, remaining(live_last_t, live_total), ra, dur(reset(last_t)), 0, 0}
  end
  if wait > max_wait then
    return {0, limit, remaining(live_last_t, live_total), retry_after(wait, max_wait),
      dur(reset(last_t)), 0, 0}
  end
  -- Grant: forget the dead entries, then log N at t.
  if head > 0 then redis.call('LTRIM', LOG, head, -1) end
  total = live_total + n
  if live_last_t == t then
    redis.call('LSET', LOG, -1, entry(t, last_n + n))
  else
    redis.call('RPUSH', LOG, entry(t, n))
  end
  commit(t)
  return {1, limit, remaining(t, total), 0, dur(reset(t)), dur(wait), t}
elseif op == 'refund' then
  -- Take up to N permits from the entry logged at the grant's At, if it is still there.
  -- T strictly increases, so the search from the newest end stops at the first T < At.
  if not (n > 0) then return 0 end
  local hi = len - 1
  while hi >= 0 do
    local lo = hi - CHUNK + 1
    if lo < 0 then lo = 0 end
    local chunk = redis.call('LRANGE', LOG, lo, hi)
    for j = #chunk, 1, -1 do
      local et, ek = parse(chunk[j])
      if et < grant_at then return 0 end
      if et == grant_at then
        local idx = lo + j - 1
        local take = n
        if ek < take then take = ek end
        -- An entry already empty (a newest one emptied before later grants came) has
        -- nothing to give back: nothing is written, as in Go.
        if take == 0 then return 0 end
        total = total - take
        if ek > take then
          redis.call('LSET', LOG, idx, entry(et, ek - take))
          commit(last_t)
          return 0
        end
        if idx == len - 1 then
          -- The newest entry is the floor of every later grant: it stays, empty, at its
          -- own instant (so later requests still queue behind it).
          redis.call('LSET', LOG, idx, entry(et, 0))
          commit(last_t)
          return 0
        end
        redis.call('LREM', LOG, -1, chunk[j])
        commit(last_t)
        return 0
      end
    end
    hi = lo - 1
  end
  return 0
end
return redis.error_reply('sliding-log: unknown operation ' .. tostring(op))
end

return serve(twin(decide))
