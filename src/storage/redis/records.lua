-- Expiring records (Store.putRecords / recordStats), against Redis server time so replicas with
-- skewed clocks agree on what is live. Every key of one call shares the space's hash tag.
-- Values are stored as "<order>\n<value>" (order '' when the write has none).
--
-- put:   KEYS 1 ids zset, 2 last-time key, 3.. record keys.
--        ARGV 1 'put', 2 ttl ms, 3 batch time ms, 4 number of ids, then the ids, then per record
--        key its value and its order ('' for none).
-- stats: KEYS 1 ids zset, 2 last-time key. ARGV 1 'stats'. Returns {count, lastTime or ''}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if ARGV[1] == 'stats' then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  return {redis.call('ZCARD', KEYS[1]), redis.call('GET', KEYS[2]) or ''}
end
if ARGV[1] ~= 'put' then return redis.error_reply('unknown records op ' .. tostring(ARGV[1])) end

local ttl = tonumber(ARGV[2])
local exp = now + ttl

-- Decimal integers of any length: longer is larger, else string order.
local function after(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

local nIds = tonumber(ARGV[4])
for i = 1, nIds do redis.call('ZADD', KEYS[1], exp, ARGV[4 + i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if nIds > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end

local last = redis.call('GET', KEYS[2])
if not last or tonumber(ARGV[3]) > tonumber(last) then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[2], ttl)
end

local a = 5 + nIds
for k = 3, #KEYS do
  local value, order = ARGV[a], ARGV[a + 1]
  a = a + 2
  local write = true
  if order ~= '' then
    local cur = redis.call('GET', KEYS[k])
    if cur then
      local curOrder = string.match(cur, '^(%d*)\n')
      if curOrder and curOrder ~= '' and not after(order, curOrder) then write = false end
    end
  end
  if write then
    redis.call('SET', KEYS[k], order .. '\n' .. value, 'PX', ttl)
  else
    -- The newer value stays, and lives as long as this batch would have.
    if redis.call('PTTL', KEYS[k]) < ttl then redis.call('PEXPIRE', KEYS[k], ttl) end
  end
end
return 1
