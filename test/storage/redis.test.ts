import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore, type RedisStoreOptions } from '../../src/storage/redis/store.js';
import type { Store } from '../../src/storage/types.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { runStoreContract, type FixtureOptions } from './contract.js';

// One redis-server for the contract tests; each test gets its own key prefix.
let server: RedisServer | undefined;
let n = 0;
async function shared(): Promise<RedisServer> {
  server ??= await startRedis();
  return server;
}
test.after(() => server?.stop());

export async function openRedis(t: TestContext, url: string, o: Partial<RedisStoreOptions>): Promise<Store> {
  const s = await createRedisStore({ url, keyPrefix: 'test', freezeObjects: true, ...o });
  t.after(() => s.close());
  return s;
}

runStoreContract('redis', async (t, opts: FixtureOptions = {}) => {
  const srv = await shared();
  const o: Partial<RedisStoreOptions> = {
    keyPrefix: `t${++n}`,
    eventLogRetention: opts.retention,
    progressIntervalMs: opts.progressIntervalMs,
  };
  let store = await openRedis(t, srv.url, o);
  return {
    store,
    async reopen() {
      await store.close();
      store = await openRedis(t, srv.url, o);
      return store;
    },
    peer: () => openRedis(t, srv.url, o),
  };
});

test('redis: store reports healthy', async (t) => {
  const srv = await shared();
  const s = await openRedis(t, srv.url, { keyPrefix: `t${++n}` });
  assert.equal(s.kind, 'redis');
  assert.equal(s.unhealthyReason(), undefined);
});
