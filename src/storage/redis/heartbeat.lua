-- One replica's heartbeat, against Redis server time: drop members whose heartbeat expired (with
-- their epochs), then keep the member in the live set until now + ttl (or remove it on leave).
-- A member that was not live gets a new epoch: the membership leases it held before (lease.lua,
-- which names the epoch) stay dead. No lease is touched: a membership lease lives exactly as long
-- as its holder's membership, so the cost is the same for one lease or ten thousand.
-- A member that takes a share cuts every other membership kept beyond now + its own ttl (a lone
-- replica's solo TTL, src/controllers/runtime/leases.ts) back to now + ttl: whoever joins a lone
-- replica, alive or crashed, takes its share within one TTL, as it would from any replica.
-- Every change of the member set (a member joined, left or expired, or was cut) is announced on
-- the member log, a short stream the other replicas' followers block on (redis/follower.ts), so
-- they renew at once instead of at their next heartbeat.
-- Same rules as src/storage/lease.ts heartbeatMembers.
-- KEYS: 1 members sorted set (score: expiry ms), 2 member epochs hash, 3 epoch counter, 4 member log.
-- ARGV: 1 member, 2 ttl ms, 3 '1' to leave, 4 '1' when the member takes a share.
-- Returns {members that take a share (sorted), this member's epoch (0 after leave)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local member = ARGV[1]
local ttl = tonumber(ARGV[2])
local changed = false

local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #dead > 0 then
  redis.call('ZREM', KEYS[1], unpack(dead))
  redis.call('HDEL', KEYS[2], unpack(dead))
  changed = true
end

local epoch = 0
if ARGV[3] == '1' then
  if redis.call('ZREM', KEYS[1], member) == 1 then changed = true end
  redis.call('HDEL', KEYS[2], member)
else
  local cur = redis.call('HGET', KEYS[2], member)
  if cur then
    epoch = tonumber(string.match(cur, '^%d+'))
  else
    epoch = redis.call('INCR', KEYS[3])
    changed = true
  end
  local value = tostring(epoch)
  if ARGV[4] ~= '1' then value = value .. ':observer' end
  if cur ~= value then redis.call('HSET', KEYS[2], member, value) end
  redis.call('ZADD', KEYS[1], now + ttl, member)
  if ARGV[4] == '1' then
    local long = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now + ttl), '+inf')
    for _, m in ipairs(long) do
      if m ~= member then
        redis.call('ZADD', KEYS[1], 'XX', now + ttl, m)
        changed = true
      end
    end
  end
end

if changed then redis.call('XADD', KEYS[4], 'MAXLEN', '16', '*', 'by', member) end

local all = redis.call('HGETALL', KEYS[2])
local live = {}
for i = 1, #all, 2 do
  if not string.find(all[i + 1], ':', 1, true) then live[#live + 1] = all[i] end
end
table.sort(live)
return {live, epoch}
