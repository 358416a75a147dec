// JSON patches over shared structure (src/apiserver/patch-sharing.ts) must mean exactly what RFC
// 6902 says: random patches of add, remove, replace, move, copy and test (copies into their own
// source, writes into copied values, moves out of copies ...) give the same result and the same
// refusals as fast-json-patch applied to a private deep copy, and never change their input. The
// seed is printed; PATCH_SEED=<n> replays one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { applyJSONPatch } from '../../src/apiserver/patch.js';
import { StatusError } from '../../src/api/status.js';
import { mulberry32 } from '../support/mulberry32.js';

const { applyPatch, deepClone } = fastJsonPatch as unknown as typeof import('fast-json-patch');
const LIMIT = 3 * 1024 * 1024;

/** fast-json-patch on a private copy, refusing what RFC 6902 4.4 forbids and the library allows: a move into one of the value's own children. */
function reference(doc: unknown, ops: Operation[]): unknown {
  for (const op of ops) if (op.op === 'move' && op.path.startsWith(`${op.from}/`)) throw new Error('move into its own child');
  return applyPatch(deepClone(doc), deepClone(ops), true, true).newDocument;
}


/** Every pointer of a document (containers and leaves), the root ("") included. */
function pointers(doc: unknown, at = ''): string[] {
  const out = [at];
  if (Array.isArray(doc)) doc.forEach((v, i) => out.push(...pointers(v, `${at}/${i}`)));
  else if (doc !== null && typeof doc === 'object') for (const [k, v] of Object.entries(doc)) out.push(...pointers(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  return out;
}

function randomOps(doc: unknown, r: () => number, n: number): Operation[] {
  const ops: Operation[] = [];
  let cur = deepClone(doc);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  for (let i = 0; i < n; i++) {
    const ps = pointers(cur);
    const containers = ps.filter((p) => {
      const v = fastJsonPatch.getValueByPointer(cur, p);
      return v !== null && typeof v === 'object';
    });
    const into = (): string => {
      const c = pick(containers);
      const v = fastJsonPatch.getValueByPointer(cur, c);
      return Array.isArray(v) ? `${c}/${r() < 0.5 ? '-' : Math.floor(r() * (v.length + 1))}` : `${c}/k${Math.floor(r() * 4)}`;
    };
    const existing = ps.filter((p) => p !== '');
    const kind = r();
    let op: Operation;
    if (kind < 0.3 || existing.length === 0) op = { op: 'copy', from: pick(ps), path: into() } as Operation;
    else if (kind < 0.5) op = { op: 'add', path: into(), value: r() < 0.5 ? `v${i}` : { n: i, l: [i] } } as Operation;
    else if (kind < 0.6) op = { op: 'remove', path: pick(existing) } as Operation;
    else if (kind < 0.7) op = { op: 'replace', path: pick(existing), value: { r: i } } as Operation;
    else if (kind < 0.85) op = { op: 'move', from: pick(existing), path: into() } as Operation;
    else {
      const p = pick(ps);
      op = { op: 'test', path: p, value: r() < 0.7 ? deepClone(fastJsonPatch.getValueByPointer(cur, p)) : 'nope' } as Operation;
    }
    // Keep only operations that apply (what the reference says), so that long sequences build up shared structure.
    try {
      cur = reference(cur, [op]);
      ops.push(op);
    } catch {
      if (r() < 0.1) ops.push(op); // now and then a failing one, to compare the refusals
      if (ops.at(-1) === op) break;
    }
  }
  return ops;
}

test('random patches over shared copies mean what RFC 6902 says, and leave their input alone', { timeout: 120_000 }, async (t) => {
  const seed = Number(process.env.PATCH_SEED ?? Date.now() % 1_000_000);
  t.diagnostic(`PATCH_SEED=${seed}`);
  const r = mulberry32(seed);
  let applied = 0;
  let refused = 0;
  for (let round = 0; round < 400; round++) {
    const doc = { metadata: { name: 'a', labels: { x: '1' }, finalizers: ['f1', 'f2'] }, spec: { list: [{ a: 1 }, { b: [2, 3] }], m: { deep: { er: true } } } };
    const before = JSON.stringify(doc);
    const ops = randomOps(doc, r, 2 + Math.floor(r() * 12));
    let expected: unknown;
    let expectedError = false;
    try {
      expected = reference(doc, ops);
    } catch {
      expectedError = true;
    }
    const got = await applyJSONPatch(doc, deepClone(ops), LIMIT).catch((e: unknown) => e);
    const what = `seed ${seed}, round ${round}: ${JSON.stringify(ops)}`;
    assert.equal(JSON.stringify(doc), before, `the input was changed: ${what}`);
    if (expectedError) {
      assert.ok(got instanceof StatusError && got.status.code === 422, `expected a 422 refusal, got ${got instanceof StatusError ? JSON.stringify(got.status) : JSON.stringify(got)}: ${what}`);
      refused++;
    } else {
      assert.ok(!(got instanceof Error), `refused what applies: ${String(got)} ${got instanceof StatusError ? got.status.message : ''}: ${what}`);
      assert.equal(JSON.stringify(got), JSON.stringify(expected), what);
      applied++;
    }
  }
  t.diagnostic(`${applied} applied, ${refused} refused alike`);
  assert.ok(applied > 200 && refused > 5, `${applied} applied, ${refused} refused`);
});

test('a value copied into its own child is the value before the copy, and writing into either leaves the other alone', async () => {
  const doc = { metadata: { name: 'a', annotations: { x: '1' } } };
  const out = await applyJSONPatch(
    doc,
    [
      { op: 'copy', from: '/metadata', path: '/metadata/annotations/c0' },
      { op: 'copy', from: '/metadata', path: '/metadata/annotations/c1' },
      { op: 'add', path: '/metadata/annotations/c0/annotations/y', value: '2' },
      { op: 'remove', path: '/metadata/annotations/x' },
      { op: 'move', from: '/metadata/annotations/c1/annotations/c0', path: '/moved' },
      { op: 'replace', path: '/moved/name', value: 'b' },
    ] as never,
    LIMIT,
  );
  assert.equal(
    JSON.stringify(out),
    JSON.stringify({
      metadata: { name: 'a', annotations: { c0: { name: 'a', annotations: { x: '1', y: '2' } }, c1: { name: 'a', annotations: { x: '1' } } } },
      moved: { name: 'b', annotations: { x: '1' } },
    }),
  );
  assert.equal(JSON.stringify(doc), '{"metadata":{"name":"a","annotations":{"x":"1"}}}');
});
