-- Penalty: the Lua twin of algo.Penalty (penalty.go). penaltyScript puts the rule's whole
-- script (prelude and body) before this file as the function inner(KEYS, ARGV), which this
-- file calls with the rule's own keys and arguments; so the rule's script runs unchanged,
-- peek mode and expiry included, and touches none of the penalty's. The base every script
-- starts with (internal/luawire/base.lua: read_now, ttl_ms, num, MAX_MICROS, get_state, put_state) comes
-- between the two.
--
-- KEYS[#KEYS]  string "P" until block (get_state of the base: a tag byte, then doubles
--              packed little-endian, 17 bytes): until = µs at which the last block ends,
--              block = its length in µs. No key: no offence remembered. The rule's keys
--              come before it; the rule keeps its own state there, in its own format. A
--              hash {until, block} (the format of earlier versions) is still read, and
--              rewritten in this one by the next offence.
-- ARGV[#ARGV-2], ARGV[#ARGV-1], ARGV[#ARGV]  Block and MaxBlock in µs, Growth (%.17g);
--              the rule's arguments come before them.
-- TTL of the penalty key: until the block ends plus, with Growth > 1, MaxBlock (how long
-- the offence is remembered), set on the write that starts a block; the rule's keys keep
-- their own TTLs. Decisions report the later of the two as ResetAfter.

local MAX_EXACT = 9007199254740992

-- call answers one call (serve of the base sets KEYS, ARGV and redis first).
local function call()
local argc = #ARGV
local block_us = tonumber(ARGV[argc - 2])
local max_us = tonumber(ARGV[argc - 1])
local growth = tonumber(ARGV[argc])
local mem = 0
if growth > 1 then mem = max_us end

local pkey = KEYS[#KEYS]
local ikeys, iargv = {}, {}
for i = 1, #KEYS - 1 do ikeys[i] = KEYS[i] end
for i = 1, argc - 3 do iargv[i] = ARGV[i] end

local mode = ARGV[1]
if mode ~= 'apply' and mode ~= 'peek' and mode ~= 'charge' then return inner(ikeys, iargv) end -- refund, or the rule's error

local function dur(us)
  if us >= MAX_MICROS then return MAX_MICROS end
  if us <= 0 then return 0 end
  return us
end

-- One now for both halves: the server's TIME is read once and handed to the rule; a
-- client's "now pad" goes to the rule unchanged (read_now keeps pad for the penalty key's
-- TTL, and the rule pads its own keys).
local now = read_now(ARGV[2])
if ARGV[2] == '' then iargv[2] = num(now) end

local p_until, p_block = 0, 0
local v = get_state(pkey, 17, 80) -- 80: "P"
if v == true then -- the previous format
  local st = redis.call('HMGET', pkey, 'until', 'block')
  if st[1] and st[2] then p_until, p_block = tonumber(st[1]), tonumber(st[2]) end
elseif v then
  local _
  _, p_until, p_block = struct.unpack('<Bdd', v)
end

-- p_end is how long after now the penalty is fresh again (≤ 0: already), as Penalty.end.
local function p_end()
  if p_block == 0 then return 0 end
  return p_until + mem - now
end

if mode == 'charge' then
  -- Penalty.charge: the rule records it, blocked or not; never an offence, the penalty
  -- unchanged. While blocked: remaining 0, retry not before the block ends.
  local d = inner(ikeys, iargv)
  if type(d) ~= 'table' or d.err then return d end
  if p_block > 0 and now < p_until then
    d[3] = 0
    d[4] = dur(math.max(p_until - now, d[4]))
  end
  local e = p_end()
  if e > 0 then d[5] = dur(math.max(d[5], e)) end
  return d
end

if p_block > 0 and now < p_until then
  -- Blocked: the rule's state is only read, by a peek of a request it can never grant.
  local probe = {}
  for i = 1, #iargv do probe[i] = iargv[i] end
  probe[1], probe[3] = 'peek', '9007199254740993'
  local d = inner(ikeys, probe)
  if type(d) ~= 'table' or d.err then return d end
  local n = tonumber(ARGV[3])
  if n and n >= MAX_EXACT and ARGV[3] ~= '9007199254740992' then n = MAX_EXACT + 2 end -- as the prelude
  local retry = dur(p_until - now)
  -- Not before the rule grants the request either (as Penalty.Apply): the block does
  -- not touch the rule's state, and a retry the rule denies would be a new offence.
  local q = {}
  for i = 1, #iargv do q[i] = iargv[i] end
  q[1] = 'peek'
  local r = inner(ikeys, q)
  if type(r) ~= 'table' or r.err then return r end
  if r[1] == 0 then retry = math.max(retry, r[4]) end
  if not n or n > d[2] then retry = MAX_MICROS end
  return {0, d[2], 0, retry, dur(math.max(d[5], p_end())), 0, 0}
end

local d = inner(ikeys, iargv)
if type(d) ~= 'table' or d.err then return d end
if d[1] == 1 or d[4] >= MAX_MICROS then -- a grant, or a request the rule can never grant
  local e = p_end()
  if e > 0 then d[5] = dur(math.max(d[5], e)) end
  return d
end

-- An offence: block, for longer while the previous offence is remembered.
local b = block_us
if p_block > 0 and now < p_until + mem then
  local nb = p_block * growth
  if nb >= max_us then b = max_us else b = math.floor(nb) end
end
p_until, p_block = now + b, b
if mode == 'apply' then
  put_state(pkey, struct.pack('<Bdd', 80, p_until, p_block), p_end())
end
-- A peek replies the rule's Remaining, what is available now (see algo.Peek): a request
-- above any limit is never an offence.
local rem = 0
if mode == 'peek' then rem = d[3] end
return {0, d[2], rem, dur(math.max(d[4], b)), dur(math.max(d[5], p_end())), 0, 0}
end

return serve(call)
