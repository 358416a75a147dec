-- Lease operations against Redis server time, so replicas with skewed clocks agree on expiry.
-- The hash survives release (holder '') so the fencing token never goes back; it increases by one
-- every time the lease changes hands. Same rules as src/storage/lease.ts.
-- KEYS: 1 lease hash. ARGV: 1 op (acquire|renew|check|release), 2 holder, 3 token, 4 ttl ms
-- Returns {1, token, expiresAt} on success, {0} otherwise.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'token', 'expiresAt')
local holder = h[1] or ''
local token = tonumber(h[2] or '0')
local exp = tonumber(h[3] or '0')
local op = ARGV[1]

if op == 'acquire' then
  local held = holder ~= '' and exp > now
  if held and holder ~= ARGV[2] then return {0} end
  if not held then token = token + 1 end
  exp = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', token, 'expiresAt', exp)
  return {1, token, exp}
end

local mine = holder ~= '' and holder == ARGV[2] and token == tonumber(ARGV[3])
if op == 'renew' then
  if not mine then return {0} end
  exp = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'expiresAt', exp)
  return {1, token, exp}
elseif op == 'check' then
  if holder ~= '' and token == tonumber(ARGV[3]) and exp > now then return {1, token, exp} end
  return {0}
elseif op == 'release' then
  if not mine then return {0} end
  redis.call('HSET', KEYS[1], 'holder', '', 'expiresAt', 0)
  return {1, token, 0}
end
return redis.error_reply('unknown lease op ' .. tostring(op))
