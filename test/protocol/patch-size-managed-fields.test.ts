// An object the server stored over the body limit by its managedFields alone: a list of
// finalizers of half the limit gets a managedFields `v:` entry per item, larger than the item, so
// the stored object is over 3 MiB while everything the client ever sent was under it. What the
// limit applies to (docs/security.md "Limits and defences"): the request body, and the part of a
// patch's result the client made, never the managedFields the server keeps beside it
// (src/apiserver/patch.ts checkPatchedSizeInSlices). Before, every later merge, strategic merge or
// JSON patch of such an object answered 413, even a repeat of the patch that stored it
// (test/security/http-list-attacks.test.ts retried its SMP of finalizers under load and got 413).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStatus, startServer, type Response } from '../support/server.js';
import { LIMIT_BYTES, fill, finalizer, finalizersPatch } from '../security/list-bodies.js';

const CM = '/api/v1/namespaces/default/configmaps';
const SMP = 'application/strategic-merge-patch+json';
const BODY_TOO_LARGE = `the request body is larger than the limit of ${LIMIT_BYTES} bytes`;
const PATCHED_TOO_LARGE = `Request entity too large: applying the patch would make the object larger than the limit of ${LIMIT_BYTES} bytes (stopped at the patched object)`;

const ok = (r: Response) => {
  assert.equal(r.status, 200, r.text.slice(0, 500));
  return r.body;
};
const owners = (o: any) => o.metadata.managedFields.map((e: any) => `${e.manager} ${e.operation} ${Object.keys(e.fieldsV1['f:metadata']?.['f:finalizers'] ?? {}).length}`);

test('an object over the body limit by its managedFields alone takes repeated patches of every kind, SSA and a PUT of what the client made; oversized content is still refused', { timeout: 240_000 }, async (t) => {
  const server = await startServer(['--sandbox']);
  t.after(() => server.stop());
  const send = (method: string, body: unknown, contentType = 'application/json', q = '') =>
    server.request(method, `${CM}/fins${q}`, { body: typeof body === 'string' ? body : JSON.stringify(body), contentType, timeoutMs: 120_000 });
  assert.equal((await server.request('POST', CM, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fins' }, data: { a: '1' } } })).status, 201);

  const { n } = fill((k) => finalizersPatch(k, 'add'), Math.floor(LIMIT_BYTES / 2));
  const finalizers = Array.from({ length: n }, (_, i) => finalizer(i));
  ok(await send('PATCH', finalizersPatch(n, 'add'), SMP));
  const stored = ok(await server.request('GET', `${CM}/fins`, { timeoutMs: 60_000 }));
  // The precondition: over the limit by managedFields alone.
  assert.ok(JSON.stringify(stored).length > LIMIT_BYTES, `stored ${JSON.stringify(stored).length} bytes`);
  const { managedFields, ...withoutManaged } = stored.metadata;
  const client = { ...stored, metadata: withoutManaged };
  assert.ok(JSON.stringify(client).length < LIMIT_BYTES * 0.55, `without managedFields ${JSON.stringify(client).length} bytes`);

  // The same patch again, and a label by each patch kind: 200, the finalizers as they were.
  ok(await send('PATCH', finalizersPatch(n, 'add'), SMP));
  ok(await send('PATCH', { metadata: { labels: { merge: 'yes' } } }, 'application/merge-patch+json'));
  ok(await send('PATCH', [{ op: 'add', path: '/metadata/labels/json', value: 'yes' }], 'application/json-patch+json'));
  const applied = ok(await send('PATCH', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fins', labels: { applied: 'yes' } } }, 'application/apply-patch+yaml', '?fieldManager=sizer'));
  assert.deepEqual(applied.metadata.labels, { merge: 'yes', json: 'yes', applied: 'yes' });
  assert.deepEqual(applied.metadata.finalizers, finalizers);
  // The finalizers' owner is the SMP's manager (the test client sends no user agent), with the list's `.` entry.
  assert.deepEqual(owners(applied), ['sizer Apply 0', `unknown Update ${n + 1}`]);

  // A PUT of the object as read is over the body limit, as in kube-apiserver (whose etcd would not
  // have stored it at all); without managedFields, which the server then keeps, it is taken.
  assertStatus(await send('PUT', applied), 413, 'RequestEntityTooLarge', BODY_TOO_LARGE);
  const { managedFields: _m, ...meta } = applied.metadata;
  const put = ok(await send('PUT', { ...applied, metadata: { ...meta, labels: { ...meta.labels, put: 'yes' } } }));
  assert.deepEqual(put.metadata.finalizers, finalizers);
  assert.deepEqual(owners(put), owners(applied));

  // Content the client adds past the limit is still refused, by every patch kind, and changes nothing.
  const big = 'x'.repeat(LIMIT_BYTES - JSON.stringify(client).length + 1024);
  assertStatus(await send('PATCH', { data: { big } }, SMP), 413, 'RequestEntityTooLarge', PATCHED_TOO_LARGE);
  assertStatus(await send('PATCH', { data: { big } }, 'application/merge-patch+json'), 413, 'RequestEntityTooLarge', PATCHED_TOO_LARGE);
  assertStatus(await send('PATCH', [{ op: 'add', path: '/data/big', value: big }], 'application/json-patch+json'), 413, 'RequestEntityTooLarge', PATCHED_TOO_LARGE);
  const after = ok(await server.request('GET', `${CM}/fins`, { timeoutMs: 60_000 }));
  assert.equal(after.metadata.resourceVersion, put.metadata.resourceVersion);
  assert.deepEqual(after.data, { a: '1' });
});
