-- Lease operations against Redis server time, so replicas with skewed clocks agree on expiry.
-- The hash survives release (holder '') so the fencing token never goes back; it increases by one
-- every time the lease changes hands. Same rules as src/storage/lease.ts.
-- A TTL lease (epoch '') is held until expiresAt. A membership lease (epoch set) is held while its
-- holder is in the live members (KEYS[2], heartbeat.lua) with that epoch (KEYS[3]); its expiresAt
-- is set far ahead so that an older replica, which knows only TTL leases, never takes it over.
-- KEYS: 1 lease hash, 2 members sorted set, 3 member epochs hash.
-- ARGV: 1 op (acquire|renew|check|release), 2 holder, 3 token, 4 ttl ms, 5 epoch (acquire of a
-- membership lease; '' otherwise)
-- Returns {1, token, expiresAt} on success, {0} otherwise.
local FAR = 9007199254740991
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'token', 'expiresAt', 'epoch')
local holder = h[1] or ''
local token = tonumber(h[2] or '0')
local exp = tonumber(h[3] or '0')
local epoch = h[4] or ''
local op = ARGV[1]

-- The epoch of member m's live membership, or nil.
local function liveEpoch(m)
  local s = redis.call('ZSCORE', KEYS[2], m)
  if not s or tonumber(s) <= now then return nil end
  local v = redis.call('HGET', KEYS[3], m)
  if not v then return nil end
  return string.match(v, '^%d+')
end

local function held()
  if holder == '' then return false end
  if epoch ~= '' then return liveEpoch(holder) == epoch end
  return exp > now
end

if op == 'acquire' then
  local want = ARGV[5] or ''
  if want ~= '' and liveEpoch(ARGV[2]) ~= want then return {0} end
  local isHeld = held()
  if isHeld and holder ~= ARGV[2] then return {0} end
  if not isHeld then token = token + 1 end
  if want ~= '' then
    if not (isHeld and epoch == want) then
      redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', token, 'expiresAt', FAR, 'epoch', want)
    end
    return {1, token, 0}
  end
  exp = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'token', token, 'expiresAt', exp, 'epoch', '')
  return {1, token, exp}
end

local mine = holder ~= '' and holder == ARGV[2] and token == tonumber(ARGV[3])
if op == 'renew' then
  if not mine then return {0} end
  if epoch ~= '' then
    if held() then return {1, token, 0} end
    return {0}
  end
  exp = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'expiresAt', exp)
  return {1, token, exp}
elseif op == 'check' then
  if token == tonumber(ARGV[3]) and held() then return {1, token, exp} end
  return {0}
elseif op == 'release' then
  if not mine then return {0} end
  redis.call('HSET', KEYS[1], 'holder', '', 'expiresAt', 0, 'epoch', '')
  return {1, token, 0}
end
return redis.error_reply('unknown lease op ' .. tostring(op))
