-- One replica's heartbeat, against Redis server time: keep the member in the live set until
-- now + ttl (or remove it on leave), drop members whose heartbeat expired, and extend every lease
-- the member holds with its token. Renewal follows the rule of lease.lua's 'renew' (and
-- src/storage/lease.ts leaseRenew): holder and token must still match, even just expired.
-- KEYS: 1 members sorted set (score: expiry ms), 2.. lease hashes.
-- ARGV: 1 member, 2 ttl ms, 3 '1' to leave, 4.. the fencing token of KEYS[2..] in order.
-- Returns {members (sorted), renewed flags (1/0 per lease)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local member = ARGV[1]
local exp = now + tonumber(ARGV[2])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], member)
else
  redis.call('ZADD', KEYS[1], exp, member)
end
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(live)

local renewed = {}
for i = 2, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'holder', 'token')
  if h[1] and h[1] ~= '' and h[1] == member and tonumber(h[2] or '0') == tonumber(ARGV[i + 2]) then
    redis.call('HSET', KEYS[i], 'expiresAt', exp)
    renewed[i - 1] = 1
  else
    renewed[i - 1] = 0
  end
end
return {live, renewed}
