// The shared timer of slow periodic jobs (src/periodic/shared-timer.ts): jobs of one period
// registered a few ms apart run in the same wake-up (the same timers phase of the event loop: a
// setImmediate queued by the first has not run when the second runs), a job of a multiple period
// runs in one of those wake-ups too, each keeps its period, and stopping one leaves the others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runEvery, sharedTimerStats } from '../../src/periodic/shared-timer.js';
import { withDeadline } from '../support/deadline.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('jobs of one period registered apart run in one wake-up; a job of three periods joins every third; each keeps its period', { timeout: 20_000 }, async () => {
  const PERIOD = 300;
  const runs: Record<'a' | 'b' | 'c' | 'thrower', number[]> = { a: [], b: [], c: [], thrower: [] };
  // Set by job a, cleared by a setImmediate it queues: still set when b runs means b ran in a's turn.
  let inATurn = false;
  const sameTurn: boolean[] = [];
  const w0 = sharedTimerStats().wakeUps;
  const stopA = runEvery(PERIOD, () => {
    runs.a.push(sharedTimerStats().wakeUps);
    inATurn = true;
    setImmediate(() => (inATurn = false));
  });
  await sleep(40);
  const stopThrower = runEvery(PERIOD, () => {
    runs.thrower.push(sharedTimerStats().wakeUps);
    throw new Error('a failing job');
  });
  await sleep(40);
  const stopB = runEvery(PERIOD, () => {
    runs.b.push(sharedTimerStats().wakeUps);
    sameTurn.push(inATurn);
  });
  const stopC = runEvery(3 * PERIOD, () => runs.c.push(sharedTimerStats().wakeUps));
  assert.equal(sharedTimerStats().periods, 2);

  const started = performance.now();
  await withDeadline((async () => {
    while (runs.c.length < 2) await sleep(20);
  })(), 'the 900 ms job to run twice', 10_000);
  const elapsed = performance.now() - started;
  const bWhileThrower = runs.b.length;
  stopThrower();
  stopC();

  // Every job ran in a wake-up where a ran, and b in a's very turn (a runs first: registered first).
  for (const w of [...runs.b, ...runs.c, ...runs.thrower]) assert.ok(runs.a.includes(w), `wake-up ${w} ran a job without a (a: ${runs.a}, b: ${runs.b}, c: ${runs.c})`);
  assert.deepEqual(sameTurn, runs.b.map(() => true));
  // The failing job did not stop the ones after it, and ran each time.
  for (const w of runs.b.slice(0, bWhileThrower)) assert.ok(runs.thrower.includes(w), `b ran in wake-up ${w} without the failing job before it`);
  // No wake-up ran nothing: the timer fired once per grid point of the shortest period.
  assert.equal(sharedTimerStats().wakeUps - w0, runs.a.length);
  // Periods kept: b once per 300 ms and c once per 900 ms over the same time (bounded from both
  // sides with a margin for a loaded machine: a late wake-up skips no grid point it was late for
  // by less than a period, so counts can only fall short by lateness).
  assert.ok(runs.b.length <= Math.floor(elapsed / PERIOD) + 1, `b ran ${runs.b.length} times in ${elapsed.toFixed(0)} ms`);
  assert.equal(runs.c.length, 2);
  // c's two runs are three b periods apart, and b runs from c's first: at least four b runs.
  assert.ok(runs.b.length >= 4, `b ran ${runs.b.length} times while c ran twice`);

  // Stopping b keeps a going.
  stopB();
  const aBefore = runs.a.length;
  const bBefore = runs.b.length;
  await withDeadline((async () => {
    while (runs.a.length < aBefore + 2) await sleep(20);
  })(), 'a to run twice more after b stopped', 10_000);
  assert.equal(runs.b.length, bBefore);
  stopA();
  stopA(); // a second stop is a no-op
  assert.equal(sharedTimerStats().periods, 0);
  const aStopped = runs.a.length;
  await sleep(2 * PERIOD);
  assert.equal(runs.a.length, aStopped);
});

test('a period must be a positive number of ms', () => {
  assert.throws(() => runEvery(0, () => undefined), /^Error: runEvery: the period must be a positive number of ms, got 0$/);
  assert.throws(() => runEvery(Number.NaN, () => undefined), /^Error: runEvery: the period must be a positive number of ms, got NaN$/);
  assert.equal(sharedTimerStats().periods, 0);
});
