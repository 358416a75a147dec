// WorkQueue with holdBackoff (src/controllers/runtime/queue.ts): a failing key's backoff holds
// against add() — a controller's own writes come back as adds — and only reset() ends it; the
// failure is logged once per change of error and once on recovery. Time is a ManualClock
// (test/support/clock.ts): the backoff is checked at its exact edge, without sleeping.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/controllers/runtime/queue.js';
import { createLogger } from '../../src/metrics/logger.js';
import { withDeadline } from '../support/deadline.js';
import { ManualClock } from '../support/clock.js';

test('a held backoff: adds during the wait do not run the key; reset() does; one log line per state change', async () => {
  const clock = new ManualClock();
  const runs: number[] = [];
  const lines: string[] = [];
  let fail = true;
  const q = new WorkQueue(
    async () => {
      runs.push(clock.now());
      if (fail) throw new Error('remote says 401');
    },
    { name: 'test', holdBackoff: true, backoff: () => 400, log: createLogger('info', (l) => lines.push(l)), clock },
  );
  const settled = (what: string) => withDeadline(q.drained(), what, 2_000);
  const t0 = clock.now();
  q.add('k');
  await settled('the first run');
  assert.equal(runs.length, 1);
  assert.equal(clock.nextTimerAt(), t0 + 400, 'the backoff timer');
  // A hot loop of adds, as our own status writes would make, over the whole backoff but its last
  // millisecond: none of them runs the key.
  for (let i = 0; i < 20; i++) {
    q.add('k');
    await settled('an add during the backoff');
    clock.advance(i < 19 ? 20 : 19);
  }
  await settled('the adds');
  assert.equal(clock.now() - t0, 399);
  assert.equal(runs.length, 1, 'adds during the backoff ran the key');
  clock.advance(1);
  await settled('the retry after the backoff');
  assert.deepEqual(runs.map((r) => r - t0), [0, 400], 'retried exactly when the backoff ended');
  // A user's change: reset() runs it at once, though the new backoff has 400 ms to go.
  q.reset('k');
  await settled('the run after reset()');
  assert.deepEqual(runs.map((r) => r - t0), [0, 400, 400]);
  fail = false;
  q.reset('k');
  await settled('the run that succeeds');
  assert.equal(runs.length, 4);
  assert.equal(clock.timers, 0, 'no timer left after the success');
  await q.stop();
  const msgs = lines.map((l) => JSON.parse(l).msg);
  assert.deepEqual(msgs, ['test: reconcile failed, retrying', 'test: reconcile succeeded again']);
});
