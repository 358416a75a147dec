// The progress (BOOKMARK) tick over a resource's watchers (src/storage/watchers.ts): once every
// watch has been told the current RV, or said when it next wants to be asked, a tick looks at no
// watcher until the RV moves or the earliest one is due. Before, every tick (one a second while a
// served watch is open, storage/watch-cache.ts) visited every watch: 10,000 visits a second at
// 10,000 tenants at rest (bench/scale). The work is counted (watchers visited), not timed; and each
// watch still gets exactly the notifications it got before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceCache } from '../../src/storage/resource-cache.js';

const WATCHES = 1000;
const INTERVAL = 1000;

test('progress ticks at rest visit no watcher; a new RV visits each once; one that asks to wait is visited again when due', async () => {
  const rc = new ResourceCache('configmaps', 5, { retention: 100, freeze: false });
  const t0 = Date.now();
  // Half the watches take every notification; the other half say "not for another minute" (as a
  // served watch does between its bookmarks, apiserver/handlers/watch.ts), then take the next one.
  const told = new Map<number, number[]>();
  let asked = 0;
  for (let i = 0; i < WATCHES; i++) {
    told.set(i, []);
    const waits = i % 2 === 1;
    let waited = false;
    rc.watch({ fromRV: 5 }, {
      onEvent: () => undefined,
      onProgress: (rv) => {
        asked++;
        if (waits && !waited) {
          waited = true;
          return 60_000;
        }
        told.get(i)!.push(rv);
        return true;
      },
    });
  }
  const tick = (rv: number, at: number) => rc.progress(rv, INTERVAL, t0 + at);
  // The replays (empty) are delivered on a microtask; a watch is not notified before.
  await new Promise((r) => setImmediate(r));
  // The RV the watches started from, for a minute of ticks: nothing to tell, nobody visited.
  for (let s = 1; s <= 60; s++) tick(5, s * 1000);
  assert.equal(rc.progressVisits, 0);
  // RV 6 (a write elsewhere): the next tick visits every watch once; half are told, half wait.
  tick(6, 61_000);
  assert.equal(rc.progressVisits, WATCHES);
  assert.equal(asked, WATCHES);
  // A minute more at RV 6: the told ones have nothing new, the waiting ones are not due before
  // 121 s: no visit until then.
  for (let s = 62; s <= 120; s++) tick(6, s * 1000);
  assert.equal(rc.progressVisits, WATCHES, 'no watcher visited while none is due');
  // 121 s: the waiting ones are due; every watch is looked at once, the waiting half told RV 6.
  tick(6, 121_000);
  assert.equal(rc.progressVisits, 2 * WATCHES);
  assert.equal(asked, WATCHES + WATCHES / 2);
  for (let s = 122; s <= 240; s++) tick(6, s * 1000);
  assert.equal(rc.progressVisits, 2 * WATCHES, 'every watch told RV 6: nothing to visit at rest');
  for (const [i, rvs] of told) assert.deepEqual(rvs, [6], `watch ${i}`);
  // A new watch from RV 6 at RV 6 has nothing to be told either; at RV 7 all are told once.
  rc.watch({ fromRV: 6 }, { onEvent: () => undefined, onProgress: () => true });
  await new Promise((r) => setImmediate(r));
  tick(6, 241_000);
  assert.equal(rc.progressVisits, 2 * WATCHES);
  tick(7, 242_000);
  assert.equal(rc.progressVisits, 3 * WATCHES + 1);
  for (const [i, rvs] of told) assert.deepEqual(rvs, [6, 7], `watch ${i}`);
});

test('a watcher that got an event is told the RV once it has been quiet for an interval, then nothing until the RV moves', async () => {
  const rc = new ResourceCache('configmaps', 0, { retention: 100, freeze: false });
  const told: number[] = [];
  rc.watch({ fromRV: 0 }, { onEvent: () => undefined, onProgress: (rv) => void told.push(rv) });
  await new Promise((r) => setImmediate(r));
  const cm = (rv: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'a', name: `cm-${rv}`, resourceVersion: String(rv) } });
  rc.apply('ADDED', { cluster: '_', namespace: 'a', name: 'cm-1' }, cm(1), 1);
  const t0 = Date.now();
  rc.progress(1, INTERVAL, t0 + 500);
  assert.deepEqual(told, [], 'not quiet for an interval yet');
  rc.progress(1, INTERVAL, t0 + 1_500);
  assert.deepEqual(told, [1]);
  const visits = rc.progressVisits;
  for (let s = 2; s <= 60; s++) rc.progress(1, INTERVAL, t0 + s * 1000);
  assert.equal(rc.progressVisits, visits, 'told RV 1: not looked at again at RV 1');
  rc.progress(2, INTERVAL, t0 + 61_000);
  assert.deepEqual(told, [1, 2]);
});
