import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisKeys, objectMapKey, validateKeyPrefix } from '../../src/storage/keys.js';
import { createStore } from '../../src/storage/index.js';

test('key prefix: trailing colons trimmed, rules named in errors', () => {
  assert.equal(validateKeyPrefix('reverser'), 'reverser');
  assert.equal(validateKeyPrefix('tenant-7:'), 'tenant-7');
  assert.equal(validateKeyPrefix('tenant-7:::'), 'tenant-7');
  assert.equal(validateKeyPrefix('cell-a:tenant_7.x'), 'cell-a:tenant_7.x');
  assert.equal(validateKeyPrefix('x'.repeat(128)), 'x'.repeat(128));
  assert.throws(() => validateKeyPrefix(''), /non-empty/);
  assert.throws(() => validateKeyPrefix(':::'), /non-empty/);
  assert.throws(() => validateKeyPrefix('x'.repeat(129)), /at most 128 characters/);
  assert.throws(() => validateKeyPrefix('a*b'), /contains "\*"; allowed characters are \[A-Za-z0-9\], '-', '_', '\.' and ':'/);
  assert.throws(() => validateKeyPrefix('a{b}'), /contains "\{"/);
  assert.throws(() => validateKeyPrefix('a b'), /contains " "/);
});

test('createStore refuses a bad prefix before connecting', async () => {
  await assert.rejects(createStore({ storage: 'redis', redisUrl: 'redis://127.0.0.1:1', redisKeyPrefix: 'bad prefix' }), /allowed characters/);
  await assert.rejects(createStore({ storage: 'embedded', eventLogRetention: 0 }), /positive integer/);
});

test('redis keys: one hash tag per logical cluster; single slot on Redis Cluster', () => {
  const k = new RedisKeys('p:');
  const res = { group: 'configbutler.ai', resource: 'gittargets' };
  assert.equal(k.objects('root:org', res), 'p:{c:root%3Aorg}:obj:configbutler.ai/gittargets');
  assert.equal(k.rv(), 'p:{g}:rv');
  const one = new RedisKeys('p', true);
  for (const key of [one.rv(), one.objects('a', res), one.log(res), one.lease('x'), one.clusters(res)]) {
    assert.match(key, /^p:\{p\}:/);
  }
  // One tag for every key, so the object hash must still name its logical cluster.
  assert.equal(one.objects('root:org', res), 'p:{p}:c:root%3Aorg:obj:configbutler.ai/gittargets');
  assert.notEqual(one.objects('a', res), one.objects('b', res));
});

test('map keys sort as (cluster, namespace, name)', () => {
  const ks = [
    { cluster: 'a', namespace: 'b', name: 'c' },
    { cluster: 'a', namespace: '', name: 'z' },
    { cluster: 'a-b', namespace: '', name: 'a' },
    { cluster: 'a', namespace: 'b-c', name: 'a' },
  ].map(objectMapKey);
  assert.deepEqual([...ks].sort(), [ks[1], ks[0], ks[3], ks[2]]);
});

test('redis url selects standalone, Sentinel or Cluster', async () => {
  const { parseRedisUrl } = await import('../../src/storage/redis/url.js');
  assert.deepEqual(parseRedisUrl('redis://h:1/2'), { url: 'redis://h:1/2' });
  assert.deepEqual(parseRedisUrl('rediss://u:p@s1:26379?sentinelMaster=m&sentinels=s2:26380'), {
    redisOptions: { username: 'u', password: 'p', tls: {}, sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }], name: 'm', db: 0 },
  });
  assert.deepEqual(parseRedisUrl('redis://n1:7000?cluster=true&nodes=n2:7001'), { clusterNodes: ['n1:7000', 'n2:7001'], redisOptions: {} });
  assert.deepEqual(parseRedisUrl('redis://n1:7000?cluster=true&nodes=n2:7001&waitReplicas=1'), { clusterNodes: ['n1:7000', 'n2:7001'], redisOptions: {}, waitReplicas: 1 });
  assert.deepEqual(parseRedisUrl('redis://h:6379/2?waitReplicas=0'), { url: 'redis://h:6379/2', waitReplicas: 0 });
  assert.equal(parseRedisUrl('redis://s1:26379?sentinelMaster=m&waitReplicas=2').waitReplicas, 2);
  assert.throws(() => parseRedisUrl('redis://h?waitReplicas=one'), { message: 'redis-url: waitReplicas must be a whole number of replicas (got "one")' });
  assert.throws(() => parseRedisUrl('http://x'), /redis:\/\/ or rediss:\/\//);
});
