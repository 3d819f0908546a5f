-- Composite of several rules on one key, all or nothing: the driver of the script that
-- multi_script.go builds. Above this text come the base every script starts with
-- (internal/luawire/base.lua), one local function per distinct algorithm script (the
-- script's whole source wrapped as `function(KEYS, ARGV, ...) ... end`, so each rule runs
-- its own Lua twin unchanged on its own keys and arguments), RULES (the function of each
-- rule, in order) and NKEYS (how many keys each rule has). In a function library all of
-- that runs once, when the library loads.
--
-- KEYS       every rule's keys, rule after rule; all carry one hash tag, so one slot
-- ARGV[1..4] an "apply" or a "charge" without config: the operation, now (or "" for the
--            server's TIME, or "now pad"), N, MaxWait in µs (see algo.Script in
--            algo/lua.go); every rule runs that operation
-- ARGV[5..]  per rule: the count c of its config arguments, then those c arguments
--
-- Reply: each rule's seven integers {allowed, limit, remaining, retry_after_us,
-- reset_after_us, wait_us, at_us}, rule after rule, then 1 when every rule allowed (the
-- grants are kept) or 0 (every key is back as it was before the call).
--
-- Every rule is asked, even after one denied, so that the caller learns every rule's
-- RetryAfter; each rule reads only its own keys, so none sees another's grant. Rollback is
-- by snapshot: DUMP and PTTL of every key before any rule runs, RESTORE ... REPLACE (or
-- DEL for a key that did not exist) after. Nothing here depends on what a rule's script
-- writes or on its writing nothing when it denies.

-- call answers one call (serve of the base sets KEYS, ARGV and redis first).
local function call()
-- One instant for every rule: the server's TIME read once (read_now, of the base that
-- comes before this file), or the client's time as sent ("now" or "now pad"), handed to
-- each rule unchanged.
local now = ARGV[2]
if now == '' then now = num(read_now(now)) end

-- saved[i] is false for a missing key, else {payload, PTTL in ms (-1: no TTL)}.
local saved = {}
for i, k in ipairs(KEYS) do
  local d = redis.call('DUMP', k)
  if d then saved[i] = {d, redis.call('PTTL', k)} else saved[i] = false end
end

local function rollback()
  for i, k in ipairs(KEYS) do
    local s = saved[i]
    if s then
      local ttl = s[2]
      if ttl < 0 then ttl = 0 elseif ttl == 0 then ttl = 1 end -- RESTORE's 0 means no TTL
      redis.call('RESTORE', k, ttl, s[1], 'REPLACE')
    else
      redis.call('DEL', k)
    end
  end
end

local reply, all, ki, ai = {}, 1, 1, 5
for r = 1, #RULES do
  local keys = {}
  for j = 1, NKEYS[r] do
    keys[j] = KEYS[ki]
    ki = ki + 1
  end
  local c = tonumber(ARGV[ai])
  local argv = {ARGV[1], now, ARGV[3], ARGV[4]}
  for j = 1, c do argv[4 + j] = ARGV[ai + j] end
  ai = ai + c + 1
  -- pcall: a rule that raises must not leave the earlier rules' grants behind (a script
  -- that errors keeps the writes it made).
  local good, res = pcall(RULES[r], keys, argv)
  if not good or type(res) ~= 'table' or res.err or #res ~= 7 then
    rollback()
    local why = 'the reply does not follow the calling convention'
    if type(res) == 'table' and res.err then
      why = res.err
    elseif not good then
      why = tostring(res)
    end
    return redis.error_reply('ERR composite rule ' .. r .. ': ' .. tostring(why))
  end
  for j = 1, 7 do reply[#reply + 1] = res[j] end
  if res[1] ~= 1 then all = 0 end
end
if all == 0 then rollback() end
reply[#reply + 1] = all
return reply
end

return serve(call)
