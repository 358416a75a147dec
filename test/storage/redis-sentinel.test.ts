// The store on a real Sentinel group (1 primary, 1 replica, 3 sentinels; test/support/redis-ha.ts),
// reached through --redis-url's sentinel form: the whole store contract, then a SIGKILL of the
// primary mid-stream.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore, type RedisStoreOptions } from '../../src/storage/redis/store.js';
import { parseRedisUrl } from '../../src/storage/redis/url.js';
import type { Store } from '../../src/storage/types.js';
import { until } from '../support/deadline.js';
import { startRedisSentinel, type RedisSentinelGroup } from '../support/redis-ha.js';
import { runStoreContract, type FixtureOptions } from './contract.js';
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
  return { keyPrefix: 'test', redisOptions: target.redisOptions, ...o };
}

async function openSentinel(t: TestContext, o: Partial<RedisStoreOptions>): Promise<Store> {
  const g = await shared();
  const s = await createRedisStore(fromUrl(g.url, { freezeObjects: true, ...o }));
  t.after(() => s.close());
  return s;
}

runStoreContract('redis sentinel', async (t, opts: FixtureOptions = {}) => {
  const o: Partial<RedisStoreOptions> = { keyPrefix: `t${++n}`, eventLogRetention: opts.retention, progressIntervalMs: opts.progressIntervalMs };
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

test('redis sentinel: SIGKILL the primary while 4 clients write; no acknowledged write lost', async (t) => {
  const g = await startRedisSentinel();
  t.after(() => g.stop());
  assert.equal(await g.primaryPort(), g.primary.port);
  const r = await writeThroughFailover(
    t,
    (o) => fromUrl(g.url, o),
    async () => {
      await g.primary.kill();
      await until(async () => (await g.primaryPort()) === g.replica.port, 'the sentinels to promote the replica', 30_000, 100);
    },
  );
  t.diagnostic(`acked ${r.acked}, failed ${r.failed}, first write after the kill ${r.outageMs} ms`);
});
