// Every refused request builds a StatusError (src/api/status.ts), anonymous 401s by the thousand
// in the attack run's "Metrics label cardinality". A StatusError carries no stack trace: it is an
// answer to the client, and capturing the stack was the largest cost of a 401 in a CPU profile of
// that attack (~25 µs of ~100). Measured as CPU against a plain Error made at the same depth in the
// same run, so the machine's load does not change the verdict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError, unauthorized } from '../../src/api/status.js';

const N = 20_000;

/** CPU ms to make N values from `make`, each 20 frames deep (a request handler's are deeper still). */
function cpuOf(make: () => unknown): number {
  const deep = (n: number): unknown => (n === 0 ? make() : deep(n - 1));
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) deep(20);
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

test('a StatusError has no stack frames, keeps its Status, and restores the stack trace limit', () => {
  const before = Error.stackTraceLimit;
  const e = unauthorized();
  assert.equal(Error.stackTraceLimit, before);
  assert.ok(e instanceof StatusError && e instanceof Error);
  assert.equal(e.name, 'StatusError');
  assert.equal(e.code, 401);
  assert.deepEqual(e.status, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
  assert.deepEqual(e.headers, {});
  assert.equal(e.stack, 'StatusError: Unauthorized');
  // Other errors keep their stacks.
  assert.ok(new Error('x').stack!.split('\n').length > 1);
});

test('making a StatusError costs well under a plain Error with its stack', { timeout: 60_000 }, (t) => {
  const plain = cpuOf(() => new Error('Unauthorized'));
  const status = cpuOf(() => unauthorized());
  const none = cpuOf(() => ({ message: 'Unauthorized' }));
  t.diagnostic(`${N} made 20 frames deep: Error ${plain.toFixed(0)} ms, StatusError ${status.toFixed(0)} ms, a plain object ${none.toFixed(0)} ms of CPU`);
  // What the frames cost, over the async calls themselves (the plain object's run).
  assert.ok(status - none < 0.5 * (plain - none), `a StatusError costs ${(status - none).toFixed(0)} ms over the calls, an Error ${(plain - none).toFixed(0)} ms`);
});
