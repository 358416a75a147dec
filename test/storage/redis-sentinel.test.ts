// The store on a real Sentinel group (1 primary, 1 replica, 3 sentinels; test/support/redis-ha.ts),
// reached through --redis-url's sentinel form: the whole store contract, then a SIGKILL of the
// primary mid-stream.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore, type RedisStoreOptions } from '../../src/storage/redis/store.js';
import { parseRedisUrl } from '../../src/storage/redis/url.js';
import { type StorageError, type Store } from '../../src/storage/types.js';
import { until } from '../support/deadline.js';
import { startRedisSentinel, type RedisSentinelGroup } from '../support/redis-ha.js';
import { CM, cm, key, runStoreContract, type FixtureOptions } from './contract.js';
import { writeThroughFailover } from './redis-failover.js';

let group: RedisSentinelGroup | undefined;
let n = 0;
async function shared(): Promise<RedisSentinelGroup> {
  group ??= await startRedisSentinel();
  return group;
}
test.after(() => group?.stop());

/** Store options for the group's --redis-url, as src/storage/index.ts builds them. */
function fromUrl(url: string, o: Partial<RedisStoreOptions>): RedisStoreOptions {
  const target = parseRedisUrl(url);
  assert.equal(target.url, undefined);
  return { keyPrefix: 'test', redisOptions: target.redisOptions, waitReplicas: target.waitReplicas, ...o };
}

async function openSentinel(t: TestContext, o: Partial<RedisStoreOptions>): Promise<Store> {
  const g = await shared();
  const s = await createRedisStore(fromUrl(g.url, { freezeObjects: true, ...o }));
  t.after(() => s.close());
  return s;
}

runStoreContract('redis sentinel', async (t, opts: FixtureOptions = {}) => {
  // Every write waits for the replica (waitReplicas=1), as a deployment that cannot lose one would.
  const o: Partial<RedisStoreOptions> = { keyPrefix: `t${++n}`, waitReplicas: 1, eventLogRetention: opts.retention, progressIntervalMs: opts.progressIntervalMs };
  let store = await openSentinel(t, o);
  return {
    store,
    async reopen() {
      await store.close();
      store = await openSentinel(t, o);
      return store;
    },
    peer: () => openSentinel(t, o),
  };
});

test('redis sentinel: waitReplicas=N fails a write that fewer replicas confirm, as Unavailable', async (t) => {
  const g = await shared(); // one replica
  const s = await createRedisStore(fromUrl(`${g.url}&waitReplicas=2`, { keyPrefix: `w${++n}`, commandTimeoutMs: 2000 }));
  t.after(() => s.close());
  const t0 = performance.now();
  await assert.rejects(s.create(CM, key('a'), cm('a')), (e: StorageError) => {
    assert.equal(e.code, 'Unavailable');
    assert.equal(e.message, 'redis: the write reached 1 of 2 replicas within 1000 ms; it may or may not be kept');
    return true;
  });
  assert.ok(performance.now() - t0 < 5000);
  // A write that changes nothing needs no replica: the answer is the real one.
  await assert.rejects(s.create(CM, key('a'), cm('a')), (e: StorageError) => e.code === 'AlreadyExists');
  await assert.rejects(s.update(CM, key('b'), cm('b'), 1), (e: StorageError) => e.code === 'NotFound');
});

test('redis sentinel: SIGKILL the primary while 4 clients write; no acknowledged write lost', async (t) => {
  // Two replicas, so the promoted primary still has one to confirm writes (waitReplicas=1).
  const g = await startRedisSentinel({ replicas: 2 });
  t.after(() => g.stop());
  assert.equal(await g.primaryPort(), g.primary.port);
  const ports = g.replicas.map((r) => r.port);
  const r = await writeThroughFailover(
    t,
    (o) => fromUrl(`${g.url}&waitReplicas=1`, o),
    async () => {
      await g.primary.kill();
      await until(async () => ports.includes(await g.primaryPort()), 'the sentinels to promote a replica', 30_000, 100);
    },
  );
  t.diagnostic(`acked ${r.acked}, failed ${r.failed}, first write after the kill ${r.outageMs} ms`);
});
