import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore, type RedisStoreOptions } from '../../src/storage/redis/store.js';
import type { Store } from '../../src/storage/types.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { CM, Collector, cm, key, runStoreContract, type FixtureOptions } from './contract.js';

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

// The follower's progress tick (src/storage/redis/follower.ts) reads the RV counter once an
// interval so that served watches' bookmarks carry the latest RV. The controllers' own informers
// take no bookmarks: with only such watchers, an idle store sends Redis nothing at all.
test('redis: the progress tick reads the counter only while a watch takes progress notifications', { timeout: 30_000 }, async (t) => {
  const srv = await shared();
  const s = await openRedis(t, srv.url, { keyPrefix: `t${++n}`, progressIntervalMs: 50 });
  const { Redis } = await import('ioredis');
  const admin = new Redis(srv.url);
  t.after(() => admin.disconnect());
  const gets = async () => Number(/^cmdstat_get:calls=(\d+)/m.exec(await admin.info('commandstats'))?.[1] ?? 0);
  const getsOver = async (ms: number) => {
    const before = await gets();
    await new Promise((r) => setTimeout(r, ms));
    return (await gets()) - before;
  };
  await s.create(CM, key('a'), cm('a'));
  const rv = await s.currentRV();
  const informer = await s.watch(CM, { fromRV: rv }, { onEvent: () => {} });
  assert.equal(await getsOver(600), 0, 'no GET of the counter with only a watcher that takes no progress');
  const served = new Collector();
  const h = await s.watch(CM, { fromRV: rv }, served.cb);
  // 12 intervals of 50 ms; a loaded machine runs fewer, never none.
  const ticking = await getsOver(600);
  assert.ok(ticking >= 2, `GETs of the counter while a watch takes progress: ${ticking}`);
  h.stop();
  await new Promise((r) => setTimeout(r, 100)); // a GET in flight when it stopped
  assert.equal(await getsOver(600), 0, 'the tick stops with the last watch that takes progress');
  informer.stop();
});

test('redis: at rest the follower asks Redis at most once a minute (one blocking XREAD), and a write still reaches a watch at once', { timeout: 60_000 }, async (t) => {
  const srv = await shared();
  const s = await openRedis(t, srv.url, { keyPrefix: `t${++n}` });
  const { Redis } = await import('ioredis');
  const admin = new Redis(srv.url);
  t.after(() => admin.disconnect());
  const calls = async () => Object.fromEntries([...(await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
  await s.create(CM, key('a'), cm('a'));
  const rv = await s.currentRV();
  // A watcher that takes no progress notifications (as the controllers' informers): no progress tick.
  const names: string[] = [];
  const h = await s.watch(CM, { fromRV: rv }, { onEvent: (e) => void names.push(e.object.metadata.name!) });
  t.after(() => h.stop());
  await new Promise((r) => setTimeout(r, 200)); // the follower's first XREAD blocks
  const before = await calls();
  // 12 s: a 5 s block re-issued its XREAD two or three times in this window.
  await new Promise((r) => setTimeout(r, 12_000));
  const after = await calls();
  const ran = Object.fromEntries(Object.entries(after).filter(([k, v]) => k !== 'info' && v > (before[k] ?? 0)).map(([k, v]) => [k, v - (before[k] ?? 0)]));
  assert.deepEqual(ran, {}, `Redis commands of a store at rest with a watch open, over 12 s: ${JSON.stringify(ran)}`);
  // The blocked XREAD returns with a write, not at the end of its block.
  const t0 = performance.now();
  await s.create(CM, key('b'), cm('b'));
  while (!names.includes('b')) {
    assert.ok(performance.now() - t0 < 5_000, `the watch did not get the write within 5 s: ${JSON.stringify(names)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
});
