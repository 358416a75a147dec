// #8 items 11 and 12: continue tokens. A token naming a resourceVersion the store has not reached
// is refused as kube-apiserver refuses a too-new resourceVersion (504 Timeout, "Too large resource
// version"), never answered with a future RV. Pages resume after the store's own key of the last
// item, so a client-written `kcp.io/cluster` annotation cannot reorder or cut a paginated list;
// the server owns that annotation in every cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, assertStatus, gitTarget, ns, startServer, type StartedServer } from '../support/server.js';

const token = (rv: number, start: string) => Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');

async function pagedNames(server: StartedServer, path: string, limit: number): Promise<string[]> {
  const names: string[] = [];
  let cont = '';
  for (let pages = 0; pages < 20; pages++) {
    const r = await server.get(`${path}?limit=${limit}${cont ? `&continue=${cont}` : ''}`);
    assert.equal(r.status, 200, r.text);
    names.push(...r.body.items.map((o: any) => `${o.metadata.annotations?.['kcp.io/cluster'] ?? ''}/${o.metadata.name}`));
    cont = r.body.metadata.continue ?? '';
    if (!cont) return names;
  }
  throw new Error('more than 20 pages');
}

test('a continue token beyond the store RV answers 504 Timeout', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  for (const n of ['a', 'b', 'c']) assert.equal((await server.request('POST', ns('default'), { body: gitTarget(n) })).status, 201);
  const list = await server.get(`${ns('default')}?limit=1`);
  const current = Number(list.body.metadata.resourceVersion);
  const r = await server.get(`${ns('default')}?limit=1&continue=${token(999999, '')}`);
  assertStatus(r, 504, 'Timeout', `Timeout: Too large resource version: 999999, current: ${current}`);
  // A token at the current RV still works.
  const ok = await server.get(`${ns('default')}?limit=1&continue=${list.body.metadata.continue}`);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.metadata.resourceVersion, String(current));
});

test('paging is not cut short by a client-written kcp.io/cluster annotation', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  for (const n of ['a', 'b', 'c', 'd', 'e']) {
    const obj = gitTarget(n);
    if (n === 'b') obj.metadata.annotations = { 'kcp.io/cluster': 'zzz', keep: 'me' };
    const r = await server.request('POST', ns('default'), { body: obj });
    assert.equal(r.status, 201, r.text);
    if (n === 'b') assert.deepEqual(r.body.metadata.annotations, { keep: 'me' });
  }
  // An update or patch cannot add it either.
  const patched = await server.request('PATCH', `${ns('default')}/c`, {
    body: { metadata: { annotations: { 'kcp.io/cluster': 'aaa' } } },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.metadata.annotations, undefined);

  const all = ['/a', '/b', '/c', '/d', '/e'];
  const unpaged = await server.get(ns('default'));
  assert.deepEqual(unpaged.body.items.map((o: any) => `/${o.metadata.name}`), all);
  assert.deepEqual(await pagedNames(server, ns('default'), 1), all);
  assert.deepEqual(await pagedNames(server, ns('default'), 2), all);

  // In a logical cluster the server stamps its own name whatever the client wrote, and a wildcard
  // list pages across clusters in store order.
  const foo = `/clusters/foo${ns('default')}`;
  const forged = gitTarget('f');
  forged.metadata.annotations = { 'kcp.io/cluster': 'aaa' };
  const created = await server.request('POST', foo, { body: forged });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.metadata.annotations['kcp.io/cluster'], 'foo');
  const wildcard = `/clusters/*${GV}/gittargets`;
  const expected = (await server.get(wildcard)).body.items.map((o: any) => `${o.metadata.annotations?.['kcp.io/cluster'] ?? ''}/${o.metadata.name}`);
  assert.equal(expected.length, 6);
  assert.deepEqual(await pagedNames(server, wildcard, 1), expected);
});
