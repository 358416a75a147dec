// WorkQueue with holdBackoff (src/controllers/runtime/queue.ts): a failing key's backoff holds
// against add() — a controller's own writes come back as adds — and only reset() ends it; the
// failure is logged once per change of error and once on recovery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/controllers/runtime/queue.js';
import { createLogger } from '../../src/metrics/logger.js';
import { withDeadline } from '../support/deadline.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a held backoff: adds during the wait do not run the key; reset() does; one log line per state change', async () => {
  const runs: number[] = [];
  const lines: string[] = [];
  let fail = true;
  const q = new WorkQueue(
    async () => {
      runs.push(Date.now());
      if (fail) throw new Error('remote says 401');
    },
    { name: 'test', holdBackoff: true, backoff: () => 400, log: createLogger('info', (l) => lines.push(l)) },
  );
  const t0 = Date.now();
  q.add('k');
  await withDeadline((async () => { while (runs.length < 1) await sleep(5); })(), 'the first run', 2_000);
  // A hot loop of adds, as our own status writes would make: none of them runs the key.
  for (let i = 0; i < 20; i++) {
    q.add('k');
    await sleep(10);
  }
  assert.equal(runs.length, 1, 'adds during the backoff ran the key');
  await withDeadline((async () => { while (runs.length < 2) await sleep(5); })(), 'the retry after the backoff', 2_000);
  assert.ok(runs[1]! - t0 >= 380, `retried after ${runs[1]! - t0} ms`);
  // A user's change: reset() runs it at once.
  const before = runs.length;
  q.reset('k');
  await withDeadline((async () => { while (runs.length < before + 1) await sleep(2); })(), 'the run after reset()', 200);
  fail = false;
  q.reset('k');
  await q.drained();
  await q.stop();
  const msgs = lines.map((l) => JSON.parse(l).msg);
  assert.deepEqual(msgs, ['test: reconcile failed, retrying', 'test: reconcile succeeded again']);
});
