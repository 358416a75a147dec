// WorkQueue runs that leave their slot (src/controllers/runtime/queue.ts detach): the keys queued
// behind a run that waits for other work (the windows controller's commits) are processed at once,
// while the detached key still runs once at a time (an add during it runs it again afterwards) and
// drained() still waits for it. Permits (runtime/permits.ts) bound the detached work, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Permits, WorkQueue } from '../../src/controllers/runtime/index.js';
import { withDeadline } from '../support/deadline.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

test('a detached run frees its slot: the next key runs while it waits, the key itself waits its turn, drained() waits for it', async () => {
  const log: string[] = [];
  const commit = gate();
  let runsOfA = 0;
  const q = new WorkQueue(
    async (key, slot) => {
      log.push(`start ${key}`);
      if (key === 'a' && ++runsOfA === 1) {
        slot.detach();
        slot.detach(); // twice is once
        await commit.opened;
      }
      log.push(`end ${key}`);
    },
    { name: 'test', concurrency: 1 },
  );
  q.add('a');
  q.add('b');
  await withDeadline(
    (async () => {
      while (!log.includes('end b')) await new Promise((r) => setImmediate(r));
    })(),
    'b to run while a waits detached',
    5_000,
  );
  // a is still in progress: adding it marks it to run again after, not alongside.
  q.add('a');
  assert.equal(q.detachedRuns, 1);
  let drained = false;
  const done = q.drained().then(() => (drained = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(drained, false, 'drained() resolved while a detached run was in progress');
  commit.open();
  await withDeadline(done, 'the queue to drain', 5_000);
  assert.deepEqual(log, ['start a', 'start b', 'end b', 'end a', 'start a', 'end a']);
  assert.equal(q.detachedRuns, 0);
});

test('without detach, the same run holds the only slot: b waits for a', async () => {
  const log: string[] = [];
  const commit = gate();
  const q = new WorkQueue(
    async (key) => {
      log.push(`start ${key}`);
      if (key === 'a') await commit.opened;
      log.push(`end ${key}`);
    },
    { name: 'test', concurrency: 1 },
  );
  q.add('a');
  q.add('b');
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(log, ['start a']);
  commit.open();
  await withDeadline(q.drained(), 'the queue to drain', 5_000);
  assert.deepEqual(log, ['start a', 'end a', 'start b', 'end b']);
});

test('permits: at most n held, the others served in arrival order, a release counts once', async () => {
  const p = new Permits(2);
  const r1 = await p.take();
  const r2 = await p.take();
  const order: number[] = [];
  const w3 = p.take().then((r) => (order.push(3), r));
  const w4 = p.take().then((r) => (order.push(4), r));
  await new Promise((r) => setImmediate(r));
  assert.equal(p.inUse, 2);
  assert.deepEqual(order, []);
  r1();
  r1();
  const r3 = await withDeadline(w3, 'the third permit', 2_000);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [3], 'a second release of the same permit gave out another');
  r2();
  const r4 = await withDeadline(w4, 'the fourth permit', 2_000);
  assert.deepEqual(order, [3, 4]);
  r3();
  r4();
  assert.equal(p.inUse, 0);
});
