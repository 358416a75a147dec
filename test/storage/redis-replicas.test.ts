// Several processes' stores on one Redis behave as one store (store-level version of the
// two-process test; the HTTP version lives with the API server).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore } from '../../src/storage/redis/store.js';
import type { KubeObject, Store } from '../../src/storage/types.js';
import { startRedis } from '../support/redis.js';
import { CM, Collector, cm, key, rvOf } from './contract.js';

test('redis: two replicas on one Redis see one history and read their own writes', async (t) => {
  const srv = await startRedis();
  t.after(() => srv.stop());
  const open = async (): Promise<Store> => {
    const s = await createRedisStore({ url: srv.url, keyPrefix: 'rep', freezeObjects: true });
    t.after(() => s.close());
    return s;
  };
  const a = await open();
  const b = await open();
  const wa = new Collector();
  const wb = new Collector();
  const ha = await a.watch(CM, { fromRV: 0 }, wa.cb);
  const hb = await b.watch(CM, { fromRV: 0 }, wb.cb);
  t.after(() => (ha.stop(), hb.stop()));

  // 1,000 interleaved writes through both; after each, the other replica reads it at once.
  const latest = new Map<string, KubeObject>();
  const acked: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const [w, r] = i % 2 ? [a, b] : [b, a];
    const name = `o${i % 50}`;
    const cur = latest.get(name);
    const o = cur
      ? await w.update(CM, key(name), cm(name, 'default', { i: String(i) }), rvOf(cur))
      : await w.create(CM, key(name), cm(name, 'default', { i: String(i) }));
    latest.set(name, o);
    acked.push(rvOf(o));
    assert.deepEqual(await r.get(CM, key(name)), o, `read on the other replica after write ${i}`);
  }
  await wa.until(() => wa.events.length >= 1000 || wa.closed !== undefined, '1000 events on A');
  await wb.until(() => wb.events.length >= 1000 || wb.closed !== undefined, '1000 events on B');
  assert.equal(wa.closed, undefined);
  assert.equal(wb.closed, undefined);
  assert.deepEqual(wa.rvs(), acked);
  assert.deepEqual(wb.rvs(), acked);
  assert.deepEqual((await a.list(CM)).items, (await b.list(CM)).items);
  // A replica started later replays the same history from any retained RV.
  const c = await open();
  const wc = new Collector();
  const hc = await c.watch(CM, { fromRV: acked[499]! }, wc.cb);
  t.after(() => hc.stop());
  await wc.next(500);
  assert.deepEqual(wc.rvs(), acked.slice(500));
});

test('redis: scripts are reloaded after SCRIPT FLUSH (NOSCRIPT)', async (t) => {
  const srv = await startRedis();
  t.after(() => srv.stop());
  const s = await createRedisStore({ url: srv.url, keyPrefix: 'ns' });
  t.after(() => s.close());
  await s.create(CM, key('a'), cm('a'));
  const { Redis } = await import('ioredis');
  const admin = new Redis(srv.url);
  t.after(() => admin.disconnect());
  await admin.script('FLUSH');
  const b = await s.create(CM, key('b'), cm('b'));
  assert.equal(rvOf(b), 2);
  assert.ok(await s.acquireLease('x', 'me', 1000));
});

test('redis: a replica that finds a hole in the event log rebuilds and ends its watches with Expired', async (t) => {
  const srv = await startRedis();
  t.after(() => srv.stop());
  const s = await createRedisStore({ url: srv.url, keyPrefix: 'gap' });
  t.after(() => s.close());
  const x = await s.create(CM, key('x'), cm('x'));
  const w = new Collector();
  const h = await s.watch(CM, { fromRV: 0 }, w.cb);
  t.after(() => h.stop());
  await w.next(1);
  // Another writer's entry whose predecessor this replica never saw (as after trimming while it
  // was away): its `l` field names an entry that is not the replica's last one.
  const { Redis } = await import('ioredis');
  const admin = new Redis(srv.url);
  t.after(() => admin.disconnect());
  const rv = await admin.incr('gap:{g}:rv');
  const y = { ...cm('y'), metadata: { resourceVersion: String(rv), name: 'y', namespace: 'default' } };
  await admin.hset('gap:{c:_}:obj:/configmaps', 'default/y', JSON.stringify(y));
  await admin.xadd('gap:{g}:log:/configmaps', `${rv}-0`, 't', 'ADDED', 'c', '_', 'f', 'default/y', 'l', String(rvOf(x) - 1), 'o', JSON.stringify(y));
  await w.until(() => w.closed !== undefined, 'the watch to end');
  assert.equal(w.closed!.code, 'Expired');
  assert.deepEqual((await s.list(CM)).items.map((o) => o.metadata.name), ['x', 'y']);
  // Clients re-list and watch again from the new list's RV.
  const w2 = new Collector();
  const h2 = await s.watch(CM, { fromRV: (await s.list(CM)).resourceVersion }, w2.cb);
  t.after(() => h2.stop());
  const z = await s.create(CM, key('z'), cm('z'));
  await w2.next(1);
  assert.deepEqual(w2.rvs(), [rvOf(z)]);
});
