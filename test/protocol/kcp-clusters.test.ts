// Logical clusters (kcp workspaces) under /clusters/<name>/: state is partitioned, the `*`
// wildcard lists and watches across clusters, writes through `*` are refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, gitTarget, startServer, watch, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const inCluster = (c: string, ns: string) => `/clusters/${c}${GV}/namespaces/${ns}/gittargets`;

test('K1, K2: the same name in two clusters are two objects; each is invisible from the other', async () => {
  const a = await server.request('POST', inCluster('c1', 'team'), { body: gitTarget('demo', 'team', { labels: { app: 'x' } }) });
  const b = await server.request('POST', inCluster('c2', 'team'), { body: gitTarget('demo', 'team', { labels: { app: 'x' } }) });
  assert.equal(a.status, 201, a.text);
  assert.equal(b.status, 201, b.text);
  assert.notEqual(a.body.metadata.uid, b.body.metadata.uid);
  assert.equal(a.body.metadata.annotations['kcp.io/cluster'], 'c1');
  assert.equal(b.body.metadata.annotations['kcp.io/cluster'], 'c2');
  const only = await server.request('POST', inCluster('c2', 'team'), { body: gitTarget('only-in-c2', 'team') });
  assert.equal(only.status, 201);
  const missing = await server.get(`${inCluster('c1', 'team')}/only-in-c2`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.reason, 'NotFound');
  // Nor from the default (non-kcp) cluster, and selectors never reach across.
  assert.equal((await server.get(`${GV}/namespaces/team/gittargets/demo`)).status, 404);
  const selected = await server.get(`${inCluster('c1', 'team')}?labelSelector=app%3Dx`);
  assert.deepEqual(
    selected.body.items.map((o: any) => [o.metadata.annotations['kcp.io/cluster'], o.metadata.name]),
    [['c1', 'demo']],
  );
});

test('K3, K5: the wildcard lists every cluster with one resourceVersion, and serves discovery', async () => {
  await server.request('POST', inCluster('w1', 'ns'), { body: gitTarget('a', 'ns') });
  await server.request('POST', inCluster('w2', 'ns'), { body: gitTarget('a', 'ns') });
  const all = await server.get(`/clusters/*${GV}/gittargets`);
  assert.equal(all.status, 200);
  const pairs = all.body.items.map((o: any) => `${o.metadata.annotations?.['kcp.io/cluster'] ?? '-'}/${o.metadata.name}`);
  for (const p of ['w1/a', 'w2/a', 'c1/demo', 'c2/demo']) assert.ok(pairs.includes(p), `${p} in ${pairs.join(',')}`);
  assert.match(all.body.metadata.resourceVersion, /^\d+$/);
  // Paging across clusters returns each object once.
  const seen: string[] = [];
  let cont = '';
  do {
    const page = await server.get(`/clusters/*${GV}/gittargets?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    assert.equal(page.status, 200, page.text);
    seen.push(...page.body.items.map((o: any) => `${o.metadata.annotations?.['kcp.io/cluster'] ?? '-'}/${o.metadata.namespace}/${o.metadata.name}`));
    cont = page.body.metadata.continue ?? '';
  } while (cont);
  assert.equal(seen.length, all.body.items.length);
  assert.equal(new Set(seen).size, seen.length);
  const disco = await server.get(`/clusters/*${GV}`);
  assert.equal(disco.status, 200);
  assert.equal(disco.body.kind, 'APIResourceList');
  assert.deepEqual(disco.body.resources.find((r: any) => r.name === 'gittargets').verbs, [
    'delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch',
  ]);
});

test('K4: a wildcard watch is one stream with increasing resourceVersions', async (t) => {
  const list = await server.get(`/clusters/*${GV}/gittargets`);
  const w = await watch(server, `/clusters/*${GV}/gittargets?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
  t.after(() => w.close());
  for (const c of ['x1', 'x2', 'x1', 'x2']) {
    const r = await server.request('POST', inCluster(c, 'ns'), { body: gitTarget(`g${Math.random().toString(36).slice(2, 8)}`, 'ns') });
    assert.equal(r.status, 201);
  }
  const events = [await w.next(), await w.next(), await w.next(), await w.next()];
  assert.deepEqual(events.map((e) => e.object.metadata.annotations['kcp.io/cluster']), ['x1', 'x2', 'x1', 'x2']);
  const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
  for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i]! > rvs[i - 1]!);
});

test('K6 and names: writes through the wildcard are 400; path-shaped cluster names are 400', async () => {
  const w = await server.request('POST', inCluster('*', 'ns'), { body: gitTarget('nope', 'ns') });
  assert.equal(w.status, 400);
  assert.equal(w.body.reason, 'BadRequest');
  const p = await server.get(`/clusters/root:org${GV}/gittargets`);
  assert.equal(p.status, 400);
  assert.match(p.body.message, /invalid logical cluster name "root:org"/);
});
