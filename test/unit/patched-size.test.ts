// The size limit on a merge or strategic merge patch's result counts what the patch produced, not
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

async function apply(kind: 'merge' | 'strategic', patch: unknown, current: unknown): Promise<number> {
  const { apply } = await decodePatch(kind, Buffer.from(JSON.stringify(patch)), 'Strict', LIMIT);
  try {
    await apply(current);
    return 200;
  } catch (e) {
    return (e as { status?: { code?: number } }).status?.code ?? 500;
  }
}

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
