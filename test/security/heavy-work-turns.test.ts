// Several heavy requests at once must not add up in front of a light one (src/registry/apply/turns.ts):
// work that has run a whole slice waits its turn, and each turn of the event loop resumes one piece
// of it. Before, each heavy request yielded with its own setImmediate, so N of them ran N slices in
// every turn: with the three JSON patches of the attack run (bench/attack/attacks-http.ts,
// "JSON-patch amplification") in flight, every step of every other request waited ~15 ms of CPU
// instead of ~5, and /healthz's p99 was 141 ms on a quiet machine.
//
// The test counts, per turn of a setImmediate ticker (the light request), how many pieces of
// synthetic sliced work ran: exact, whatever the load. (The patches of that attack have since become
// cheap, src/apiserver/patch-sharing.ts; any long sliced work, a list at the body limit say, still
// comes here.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inSlices, type Work } from '../../src/registry/apply/work.js';
import { withDeadline } from '../support/deadline.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/** Runs `heavy` while a setImmediate ticker samples `probe()` at each of its turns; returns the differences between turns. */
async function perTurn(heavy: () => Promise<unknown>, probe: () => number): Promise<number[]> {
  let running = true;
  const diffs: number[] = [];
  let last = probe();
  const ticker = (async () => {
    while (running) {
      await turn();
      const now = probe();
      diffs.push(now - last);
      last = now;
    }
  })();
  await heavy();
  running = false;
  await ticker;
  return diffs;
}

test('three pieces of sliced work run one slice per turn of the event loop, in turn', { timeout: 60_000 }, async () => {
  // The ticker numbers the turns; each step of a work records which turn it ran in.
  let turnNo = 0;
  const ran = new Map<number, Set<number>>();
  function* work(id: number, steps: number): Work<number> {
    for (let i = 0; i < steps; i++) {
      const until = performance.now() + 0.3;
      while (performance.now() < until);
      let s = ran.get(turnNo);
      if (!s) ran.set(turnNo, (s = new Set()));
      s.add(id);
      yield;
    }
    return steps;
  }
  await withDeadline(
    perTurn(() => Promise.all([inSlices(work(1, 100), 1), inSlices(work(2, 100), 1), inSlices(work(3, 100), 1)]), () => ++turnNo),
    'three sliced works',
    50_000,
  );
  const worksPerTurn = [...ran].map(([t, ids]) => [t, ids.size] as const);
  // In the first turn each work starts at once (a work that fits in one slice never waits); after that, one per turn.
  const crowded = worksPerTurn.filter(([t, n]) => t > 1 && n > 1);
  assert.deepEqual(crowded, [], `turns in which more than one heavy work ran (turn, works): ${JSON.stringify(worksPerTurn.slice(0, 20))}`);
  assert.ok(worksPerTurn.length >= 30, `the works took many turns: ${worksPerTurn.length}`);
});
