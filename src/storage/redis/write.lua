-- One write (create, update or delete) as one atomic step: compare the stored resourceVersion,
-- take the next value of the store-wide counter, store the object, append the event to the
-- resource's event log with entry id `<rv>-0`.
-- KEYS: 1 RV counter, 2 objects hash (cluster, resource), 3 event log stream, 4 clusters set
-- ARGV: 1 op (create|update|delete), 2 hash field, 3 expected RV ('' = unconditional),
--       4 logical cluster, 5/6 object JSON before/after the RV digits, 7 retention (entries)
-- Returns {'ok', rv[, last JSON for delete]} | {'exists'} | {'notfound'} | {'conflict', currentRV}
--
-- The client serializes `metadata.resourceVersion` as the first RV-shaped member of the JSON
-- text, so the first match of the pattern below is always the object's own resourceVersion.
local op = ARGV[1]
local cur = redis.call('HGET', KEYS[2], ARGV[2])
if op == 'create' then
  if cur then return {'exists'} end
else
  if not cur then return {'notfound'} end
  local curRV = string.match(cur, '"resourceVersion":"(%d+)"')
  if ARGV[3] ~= '' and curRV ~= ARGV[3] then return {'conflict', curRV} end
end

local rv = redis.call('INCR', KEYS[1])
-- The log's previous entry, stored in the new one: a follower whose last entry differs knows it
-- missed events (trimmed while it was away) and must re-list.
local prevLog = '0'
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if last[1] then prevLog = string.match(last[1][1], '^(%d+)') end

local json, typ
if op == 'delete' then
  json = (string.gsub(cur, '"resourceVersion":"%d+"', '"resourceVersion":"' .. rv .. '"', 1))
  redis.call('HDEL', KEYS[2], ARGV[2])
  typ = 'DELETED'
else
  json = ARGV[5] .. rv .. ARGV[6]
  redis.call('HSET', KEYS[2], ARGV[2], json)
  if op == 'create' then
    redis.call('SADD', KEYS[4], ARGV[4])
    typ = 'ADDED'
  else
    typ = 'MODIFIED'
  end
end

if cur then
  redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[7], rv .. '-0',
    't', typ, 'c', ARGV[4], 'f', ARGV[2], 'l', prevLog, 'o', json, 'p', cur)
else
  redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[7], rv .. '-0',
    't', typ, 'c', ARGV[4], 'f', ARGV[2], 'l', prevLog, 'o', json)
end
if op == 'delete' then return {'ok', rv, json} end
return {'ok', rv}
