// Redis goes away while clients write: failed writes are Unavailable (fast), acknowledged writes
// survive (appendonly), watches end cleanly, and the store recovers without a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { StorageError, type KubeObject } from '../../src/storage/types.js';
import { startRedis } from '../support/redis.js';
import { until } from '../support/deadline.js';
import { CM, Collector, cm, key, rvOf } from './contract.js';

test('redis: kill redis-server while 4 clients write; nothing acknowledged is lost', async (t) => {
  const srv = await startRedis({ appendonly: true });
  t.after(() => srv.stop());
  const s = await createRedisStore({ url: srv.url, keyPrefix: 'fault', commandTimeoutMs: 2000 });
  t.after(() => s.close());
  const w = new Collector();
  await s.watch(CM, { fromRV: 0 }, w.cb);

  const acked: KubeObject[] = [];
  const failures: { code: string; ms: number }[] = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  let afterOk = 0;
  const client = async (c: number): Promise<void> => {
    let cur: KubeObject | undefined;
    for (let i = 0; phase !== 'after' || afterOk < 200; i++) {
      const t0 = performance.now();
      try {
        const body = cm(`c${c}`, 'default', { i: String(i) });
        // After a failed write the client cannot know whether it applied: re-read, like a client would.
        cur = cur ? await s.update(CM, key(`c${c}`), body, rvOf(cur)) : await s.create(CM, key(`c${c}`), body);
        acked.push(cur);
        if (phase === 'after') afterOk++;
      } catch (err) {
        assert.ok(err instanceof StorageError, String(err));
        if (err.code === 'Conflict' || err.code === 'AlreadyExists') {
          cur = await s.get(CM, key(`c${c}`)); // an ambiguous earlier write did apply
          continue;
        }
        failures.push({ code: err.code, ms: performance.now() - t0 });
        await new Promise((r) => setTimeout(r, 10)); // client backoff while the backend is down
      }
    }
  };
  const clients = [0, 1, 2, 3].map(client);
  await until(() => acked.length >= 400, '400 acknowledged writes', 30_000, 5);
  await srv.kill();
  phase = 'down';
  await w.until(() => w.closed !== undefined, 'the watch to end');
  assert.equal(w.closed!.code, 'Unavailable');
  await until(() => failures.length >= 20, '20 failed writes while Redis is down', 30_000, 5);
  assert.match(s.unhealthyReason() ?? '', /redis/);
  await srv.restart();
  phase = 'after';
  await Promise.all(clients);

  assert.ok(failures.length >= 20);
  for (const f of failures) {
    assert.equal(f.code, 'Unavailable');
    assert.ok(f.ms < 5000, `a failed write took ${f.ms} ms`);
  }
  // The event-log follower reconnects on its own backoff, possibly after the command connection.
  const deadline = Date.now() + 5000;
  while (s.unhealthyReason() !== undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(s.unhealthyReason(), undefined);
  // Every acknowledged write is in the event log, in order, after the restart.
  const fresh = await createRedisStore({ url: srv.url, keyPrefix: 'fault' });
  t.after(() => fresh.close());
  const all = new Collector();
  const h = await fresh.watch(CM, { fromRV: 0 }, all.cb);
  t.after(() => h.stop());
  const maxAcked = Math.max(...acked.map(rvOf));
  await all.until(() => all.events.at(-1)?.rv === maxAcked, 'the last acknowledged write');
  const logged = new Map(all.events.map((e) => [e.rv, e.object]));
  for (const o of acked) assert.deepEqual(logged.get(rvOf(o)), o);
  const rvs = all.rvs();
  for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i]! > rvs[i - 1]!);
  t.diagnostic(`acked ${acked.length}, failed ${failures.length}, slowest failure ${Math.max(...failures.map((f) => f.ms)).toFixed(0)} ms`);
  // The same store serves watches again.
  const again = new Collector();
  const h2 = await s.watch(CM, { fromRV: maxAcked }, again.cb);
  t.after(() => h2.stop());
  const n = await s.create(CM, key('new'), cm('new'));
  await again.until(() => again.rvs().includes(rvOf(n)), 'a live event after recovery');
});

test('redis: back after an outage with nothing written since, the store is healthy again within seconds', { timeout: 60_000 }, async (t) => {
  const srv = await startRedis({ appendonly: true });
  t.after(() => srv.stop());
  const s = await createRedisStore({ url: srv.url, keyPrefix: 'quiet', commandTimeoutMs: 2000 });
  t.after(() => s.close());
  const w = new Collector();
  await s.watch(CM, { fromRV: 0 }, w.cb); // the follower blocks on the ConfigMaps' log
  await s.create(CM, key('before'), cm('before'));
  await srv.kill();
  await until(() => s.unhealthyReason() !== undefined, 'the store to see the outage', 20_000, 5);
  // Both connections closed with the server; the follower's XREAD failed with the same close.
  await new Promise((r) => setTimeout(r, 500));
  await srv.restart();
  // No write follows: the follower's first XREAD after the outage must not wait for one (it did,
  // for FOLLOW_BLOCK_MS, 60 s, with /readyz failing meanwhile); it blocks 500 ms at most.
  const back = performance.now();
  await until(() => s.unhealthyReason() === undefined, 'the store to be healthy again', 5_000, 5);
  t.diagnostic(`healthy ${(performance.now() - back).toFixed(0)} ms after Redis was back`);
});

test('redis: a hung redis-server fails requests within the command timeout, then recovers', async (t) => {
  const srv = await startRedis();
  t.after(() => srv.stop());
  const s = await createRedisStore({ url: srv.url, keyPrefix: 'hang', commandTimeoutMs: 1000 });
  t.after(() => s.close());
  await s.create(CM, key('a'), cm('a'));
  srv.pause();
  const t0 = performance.now();
  await assert.rejects(s.create(CM, key('b'), cm('b')), (e: StorageError) => e.code === 'Unavailable');
  await assert.rejects(s.get(CM, key('a')), (e: StorageError) => e.code === 'Unavailable');
  const ms = performance.now() - t0;
  assert.ok(ms < 5000, `${ms} ms`);
  srv.resume();
  // The timed-out create may or may not have applied; either answer is consistent.
  await s.create(CM, key('b'), cm('b')).catch((e: StorageError) => assert.equal(e.code, 'AlreadyExists'));
  assert.ok(await s.get(CM, key('b')));
});
