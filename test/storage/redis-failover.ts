// Shared by redis-cluster.test.ts and redis-sentinel.test.ts: clients write through one store
// while the primary that holds the store's keys is SIGKILLed. Redis Cluster or Sentinel promotes
// the replica; the same store (no restart) must carry on, and every write it acknowledged must be
// readable afterwards, in order, from a fresh store.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore, type RedisStoreOptions } from '../../src/storage/redis/store.js';
import { StorageError, type KubeObject, type Store } from '../../src/storage/types.js';
import { until } from '../support/deadline.js';
import { CM, Collector, cm, key, rvOf } from './contract.js';

export interface FailoverResult {
  acked: number;
  failed: number;
  /** From the kill to the first acknowledged write after it. */
  outageMs: number;
}

export async function writeThroughFailover(
  t: TestContext,
  open: (o: Partial<RedisStoreOptions>) => RedisStoreOptions,
  killPrimary: () => Promise<void>,
): Promise<FailoverResult> {
  const openStore = async (): Promise<Store> => {
    const s = await createRedisStore(open({ keyPrefix: 'failover', commandTimeoutMs: 2000, connectWaitMs: 10_000 }));
    t.after(() => s.close());
    return s;
  };
  const s = await openStore();
  assert.equal(s.unhealthyReason(), undefined);
  const w = new Collector();
  await s.watch(CM, { fromRV: 0 }, w.cb);

  const acked: KubeObject[] = [];
  const failures: string[] = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  let killedAt = 0;
  let firstAfter = 0;
  let afterKill = 0;
  const client = async (c: number): Promise<void> => {
    let cur: KubeObject | undefined;
    for (let i = 0; phase !== 'after' || afterKill < 150; i++) {
      try {
        const body = cm(`c${c}`, 'default', { i: String(i) });
        cur = cur ? await s.update(CM, key(`c${c}`), body, rvOf(cur)) : await s.create(CM, key(`c${c}`), body);
        acked.push(cur);
        if (phase !== 'before') {
          firstAfter ||= performance.now();
          afterKill++;
        }
      } catch (err) {
        assert.ok(err instanceof StorageError, String(err));
        if (err.code === 'Conflict' || err.code === 'AlreadyExists') {
          // An ambiguous earlier write (failed on the client) did apply: read, like a client would.
          cur = await s.get(CM, key(`c${c}`)).catch(() => cur);
          continue;
        }
        assert.equal(err.code, 'Unavailable', err.message);
        failures.push(err.message);
        await new Promise((r) => setTimeout(r, 20)); // client backoff while there is no primary
      }
    }
  };
  const clients = [0, 1, 2, 3].map(client);
  await until(() => acked.length >= 150, '150 acknowledged writes before the kill', 30_000, 5);
  // Nothing fails while the primary is up (e.g. NOSCRIPT from a script cached on another node).
  assert.deepEqual(failures, [], 'failed writes before the kill');
  killedAt = performance.now();
  await killPrimary();
  phase = 'down'; // writes acknowledged from here on went to the promoted replica
  await until(() => afterKill >= 1, 'a write acknowledged by the promoted replica', 40_000, 20);
  phase = 'after';
  await Promise.all(clients);

  // The store recovered on its own: healthy, and it serves watches and consistent reads again.
  await until(() => s.unhealthyReason() === undefined, 'the store to report healthy', 20_000);
  const maxAcked = Math.max(...acked.map(rvOf));
  const again = new Collector();
  const h = await s.watch(CM, { fromRV: maxAcked }, again.cb);
  t.after(() => h.stop());
  const n = await s.create(CM, key('new'), cm('new'));
  await again.until(() => again.rvs().includes(rvOf(n)), 'a live event after the failover', 20_000);
  for (const c of [0, 1, 2, 3]) {
    const last = acked.filter((o) => o.metadata.name === `c${c}`).at(-1)!;
    const now = await s.get(CM, key(`c${c}`));
    assert.ok(rvOf(now!) >= rvOf(last), `c${c}: read ${rvOf(now!)} after acknowledged ${rvOf(last)}`);
  }

  // Every acknowledged write is in the event log of the promoted primary, unchanged and in order.
  const fresh = await openStore();
  const all = new Collector();
  const h2 = await fresh.watch(CM, { fromRV: 0 }, all.cb);
  t.after(() => h2.stop());
  await all.until(() => all.rvs().includes(rvOf(n)), 'the whole history on a fresh store', 20_000);
  const logged = new Map(all.events.map((e) => [e.rv, e.object]));
  const lost = acked.filter((o) => !logged.has(rvOf(o)));
  assert.deepEqual(lost.map(rvOf), [], `${lost.length} of ${acked.length} acknowledged writes lost`);
  for (const o of acked) assert.deepEqual(logged.get(rvOf(o)), o);
  const rvs = all.rvs();
  for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i]! > rvs[i - 1]!, `event log order at ${i}`);
  return { acked: acked.length, failed: failures.length, outageMs: Math.round(firstAfter - killedAt) };
}
