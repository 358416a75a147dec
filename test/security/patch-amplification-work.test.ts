// JSON-patch amplification, measured where the work happens (src/apiserver/patch.ts applyJSONPatch):
// the copy-doubling patch of the attack run must be refused with its exact 413 after work bounded
// by the body limit, and none of that work may hold the event loop for long at once. Both are
// measured in CPU time (process.cpuUsage), not wall time, so a loaded machine does not change them:
// a setImmediate ticker records the CPU spent between two of its turns, which is the longest
// synchronous stretch the patch took (on a busy machine a stretch is cut into more turns, never
// merged). Since copies share structure (src/apiserver/patch-sharing.ts) the whole patch is ~0.5 ms
// of CPU; when each copy was cloned against the byte budget, ~20 ms. Before the bound was kept while copying (three walks of each copied value: size, clone,
// the library's check for undefined; the last copy in one go), the longest stretch was ~30-40 ms of
// CPU and the whole patch ~70 ms; now it is one sliced walk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyJSONPatch } from '../../src/apiserver/patch.js';
import { StatusError } from '../../src/api/status.js';
import { withDeadline } from '../support/deadline.js';

const LIMIT = 3 * 1024 * 1024;

/** A stored GitTarget as the registry hands it to a patch (managedFields included). */
function stored(): Record<string, unknown> {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: {
      name: 'amp',
      namespace: 'default',
      uid: '0b6d6c1c-6d2f-4a77-8c3b-2f5d2f1c9a10',
      resourceVersion: '7',
      generation: 1,
      creationTimestamp: '2026-12-01T18:00:00Z',
      managedFields: [
        {
          manager: 'kubectl-client-side-apply',
          operation: 'Update',
          apiVersion: 'configbutler.ai/v1alpha1',
          time: '2026-12-01T18:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:spec': { '.': {}, 'f:branch': {}, 'f:path': {}, 'f:repository': { '.': {}, 'f:url': {} } } },
        },
      ],
    },
    spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: '.' },
  };
}

/** The attack run's patch (bench/attack/attacks-http.ts): one 1 KiB add, then 30 copies of /metadata into its annotations. */
function amplifying(): Array<Record<string, unknown>> {
  const ops: Array<Record<string, unknown>> = [{ op: 'add', path: '/metadata/annotations', value: { seed: 'x'.repeat(1024) } }];
  for (let i = 0; i < 30; i++) ops.push({ op: 'copy', from: '/metadata', path: `/metadata/annotations/c${i}` });
  return ops;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Runs `work` while a setImmediate ticker measures the CPU between its turns; returns the longest stretch and the total. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T | unknown; longestMs: number; totalMs: number }> {
  let running = true;
  let longest = 0;
  let last = cpuMs();
  const ticker = (async () => {
    while (running) {
      await new Promise<void>((r) => setImmediate(r));
      const now = cpuMs();
      longest = Math.max(longest, now - last);
      last = now;
    }
  })();
  const started = cpuMs();
  const result = await work().catch((e: unknown) => e);
  const totalMs = cpuMs() - started;
  running = false;
  await ticker;
  return { result, longestMs: longest, totalMs };
}

test('the copy-amplifying JSON patch is refused with 413 after work bounded by the limit, in short stretches', { timeout: 60_000 }, async (t) => {
  const ops = amplifying() as never;
  // Warm-up (JIT), then the measured runs: the best of five, as a GC of other tests' garbage may
  // land in any one of them.
  await applyJSONPatch(stored(), ops, LIMIT).catch(() => undefined);
  const runs: Array<{ longestMs: number; totalMs: number }> = [];
  for (let i = 0; i < 5; i++) {
    const m = await withDeadline(measured(() => applyJSONPatch(stored(), ops, LIMIT)), 'the amplifying patch', 20_000);
    assert.ok(m.result instanceof StatusError, `expected a StatusError, got ${String(m.result)}`);
    assert.deepEqual(m.result.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Request entity too large: applying the patch would make the object larger than the limit of ${LIMIT} bytes (stopped at operation 12 (copy from "/metadata" at "/metadata/annotations/c11"))`,
      reason: 'RequestEntityTooLarge',
      code: 413,
    });
    runs.push(m);
  }
  const best = (f: (r: { longestMs: number; totalMs: number }) => number) => Math.min(...runs.map(f));
  t.diagnostic(`CPU per patch ${runs.map((r) => r.totalMs.toFixed(1)).join(', ')} ms; longest stretch ${runs.map((r) => r.longestMs.toFixed(1)).join(', ')} ms`);
  // The slices are 5 ms of wall time (src/registry/apply/work.ts SLICE_MS); 12 ms leaves room for a
  // minor GC inside one. Before the fix the last copy alone was one stretch of ~30-40 ms.
  assert.ok(best((r) => r.longestMs) < 12, `longest synchronous stretch ${best((r) => r.longestMs).toFixed(1)} ms of CPU`);
  // Copies share structure and shared values keep their size (src/apiserver/patch-sharing.ts), so
  // each copy costs the walk of what is new in it: ~0.5 ms here. Cloning each copy against the
  // byte budget cost ~20 ms (and ~70 ms before the budget was kept while copying).
  assert.ok(best((r) => r.totalMs) < 5, `the patch took ${best((r) => r.totalMs).toFixed(1)} ms of CPU`);
});

test('a JSON patch within the limit still applies: copies are deep, __proto__ stays a key, the result has ordinary objects', { timeout: 30_000 }, async () => {
  const doc = { metadata: { name: 'a', annotations: { x: '1' } }, data: JSON.parse('{"__proto__":"p","k":"v"}') as Record<string, string> };
  const out = (await applyJSONPatch(
    doc,
    [
      { op: 'copy', from: '/metadata/annotations', path: '/spec' },
      { op: 'add', path: '/spec/y', value: { deep: [1, { z: true }] } },
      { op: 'copy', from: '/data', path: '/data2' },
      { op: 'add', path: '/data2/__proto__', value: 'q' },
    ] as never,
    LIMIT,
  )) as Record<string, Record<string, unknown>>;
  assert.equal(JSON.stringify(out), '{"metadata":{"name":"a","annotations":{"x":"1"}},"data":{"__proto__":"p","k":"v"},"spec":{"x":"1","y":{"deep":[1,{"z":true}]}},"data2":{"__proto__":"q","k":"v"}}');
  // The copy is not shared with its source, and nothing reached a prototype.
  assert.equal(out.metadata!.annotations === out.spec, false);
  assert.equal(Object.getPrototypeOf(out.spec), Object.prototype);
  assert.equal(Object.getPrototypeOf(out.data2), Object.prototype);
  assert.equal(({} as Record<string, unknown>).k, undefined);
  // The input was not changed.
  assert.deepEqual(Object.keys(doc.metadata.annotations), ['x']);
});
