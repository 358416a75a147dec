// The size limit on a patch's result (merge, strategic merge and JSON patch) counts what the patch produced, not
// the managedFields the server keeps beside it (src/apiserver/patch.ts checkPatchedSizeInSlices):
// an object whose list is near the limit has managedFields about as large, and counting them
// refused every later patch of it, even a repeat of the patch that stored it (found by
// test/security/http-list-attacks.test.ts retrying its SMP of finalizers under load: 413).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodePatch } from '../../src/apiserver/body.js';

const LIMIT = 64 * 1024;
const finalizers = Array.from({ length: 1_200 }, (_, i) => `example.com/fin-${String(i).padStart(5, '0')}`);
// managedFields as the server writes them for those finalizers: one `v:` key each.
const fieldsV1 = { f: { metadata: { f: { finalizers: Object.fromEntries(finalizers.map((f) => [`v:${JSON.stringify(f)}`, {}])) } } } };
const stored = () => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'fins', finalizers: [...finalizers], managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1 }] },
  data: { a: '1' },
});

type Outcome = { code: number; reason?: string; message?: string; result?: any };

async function patched(kind: 'merge' | 'strategic' | 'json', patch: unknown, current: unknown): Promise<Outcome> {
  const { apply } = await decodePatch(kind, Buffer.from(JSON.stringify(patch)), 'Strict', LIMIT);
  try {
    return { code: 200, result: await apply(current) };
  } catch (e) {
    const s = (e as { status?: { code?: number; reason?: string; message?: string } }).status;
    return { code: s?.code ?? 500, reason: s?.reason, message: s?.message };
  }
}

const apply = async (kind: 'merge' | 'strategic' | 'json', patch: unknown, current: unknown) => (await patched(kind, patch, current)).code;
const TOO_LARGE = {
  code: 413,
  reason: 'RequestEntityTooLarge',
  message: `Request entity too large: applying the patch would make the object larger than the limit of ${LIMIT} bytes (stopped at the patched object)`,
};

test('the stored object is over the limit only by its managedFields (the precondition)', () => {
  const o = stored();
  assert.ok(JSON.stringify(o).length > LIMIT, `stored ${JSON.stringify(o).length}`);
  assert.ok(JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: undefined } }).length < LIMIT);
});

test('a repeated strategic merge patch of the same finalizers and a label patch are not refused', async () => {
  assert.equal(await apply('strategic', { metadata: { finalizers } }, stored()), 200);
  assert.equal(await apply('strategic', { metadata: { labels: { a: 'b' } } }, stored()), 200);
  assert.equal(await apply('merge', { metadata: { labels: { a: 'b' } } }, stored()), 200);
});

test('a patch whose own result is over the limit is still refused, and so is one that writes managedFields', async () => {
  assert.equal(await apply('merge', { data: { big: 'x'.repeat(LIMIT) } }, stored()), 413);
  assert.equal(await apply('strategic', { data: { big: 'x'.repeat(LIMIT) } }, stored()), 413);
  const o = stored();
  // managedFields sent by the client count: they are the patch's, not the server's.
  assert.equal(await apply('merge', { metadata: { managedFields: o.metadata.managedFields } }, stored()), 413);
});

test('a JSON patch of an object over the limit only by its managedFields: a repeat of the finalizers and a label are applied, the stored managedFields kept', async () => {
  const replace = [{ op: 'replace', path: '/metadata/finalizers', value: finalizers }];
  const label = [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }];
  for (const ops of [replace, label]) {
    const current = stored();
    const { code, result } = await patched('json', ops, current);
    assert.equal(code, 200, JSON.stringify(ops).slice(0, 80));
    // The stored array itself, in its place among metadata's keys.
    assert.equal(result.metadata.managedFields, current.metadata.managedFields);
    assert.deepEqual(Object.keys(result.metadata).slice(0, 3), ['name', 'finalizers', 'managedFields']);
  }
  const { result } = await patched('json', label, stored());
  assert.deepEqual(result, { ...stored(), metadata: { ...stored().metadata, labels: { a: 'b' } } });
  // A copy within the remaining budget still works (the budget no longer counts the stored managedFields).
  assert.equal(await apply('json', [{ op: 'copy', from: '/data/a', path: '/data/b' }], stored()), 200);
});

test('a JSON patch whose own result is over the limit is refused with the exact Status, and so is one that writes managedFields', async () => {
  const tooLarge = (o: Outcome) => ({ code: o.code, reason: o.reason, message: o.message });
  assert.deepEqual(tooLarge(await patched('json', [{ op: 'add', path: '/data/big', value: 'x'.repeat(LIMIT) }], stored())), TOO_LARGE);
  const o = stored();
  // managedFields written by the patch count: a copy of them is the patch's.
  assert.deepEqual(tooLarge(await patched('json', [{ op: 'replace', path: '/metadata/managedFields', value: o.metadata.managedFields }], stored())), TOO_LARGE);
  assert.deepEqual(tooLarge(await patched('json', [{ op: 'add', path: '/metadata/managedFields/-', value: { manager: 'x' } }], stored())), TOO_LARGE);
  // A copy of the managedFields elsewhere is counted where it is made.
  const copy = await patched('json', [{ op: 'copy', from: '/metadata/managedFields', path: '/data/copy' }], stored());
  assert.deepEqual([copy.code, copy.reason], [413, 'RequestEntityTooLarge']);
  assert.match(copy.message!, /stopped at operation 0 \(copy from "\/metadata\/managedFields" at "\/data\/copy"\)\)$/);
});
