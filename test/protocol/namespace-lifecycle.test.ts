// NamespaceLifecycle admission against a hosting cluster (src/admission/namespace-lifecycle.ts),
// fast and without a control plane: the hosting cluster is the test double of
// test/support/fake-hosting-cluster.ts, which serves namespaces (list, get, watch) as kube-apiserver
// does. The same cases against the real kube-apiserver are in
// test/cluster/protocol-differential.test.ts. Exact Status bodies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeHostingCluster, type FakeHostingCluster } from '../support/fake-hosting-cluster.js';
import { gitTarget, startServer, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';

const GV = '/apis/configbutler.ai/v1alpha1';
let fake: FakeHostingCluster;
let server: StartedServer;

before(async () => {
  fake = await startFakeHostingCluster();
  fake.setNamespace('team-a', 'Active');
  server = await startServer(['--kubeconfig', fake.kubeconfigPath, '--register-apiservice=false', '--authentication-skip-lookup=true', '--controllers=none']);
});
after(async () => {
  await server?.stop();
  await fake?.close();
});

const create = (ns: string, body: any, cluster = '') => server.request('POST', `${cluster}${GV}/namespaces/${ns}/gittargets`, { body });

test('a create in a namespace the hosting cluster does not have: 404 namespaces "x" not found, nothing stored', async () => {
  const r = await create('no-such-ns', gitTarget('orphan', 'no-such-ns'));
  assert.equal(r.status, 404, r.text);
  assert.deepEqual(r.body, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'namespaces "no-such-ns" not found', reason: 'NotFound',
    details: { name: 'no-such-ns', kind: 'namespaces' }, code: 404,
  });
  const list = await server.request('GET', `${GV}/gittargets`);
  assert.deepEqual(list.body.items, []);
  assert.equal((await create('team-a', gitTarget('ok', 'team-a'))).status, 201);
});

test('a namespace created a moment ago is found (a live read when the informer has not seen it yet)', async () => {
  fake.setNamespace('fresh', 'Active');
  const r = await create('fresh', gitTarget('new', 'fresh'));
  assert.equal(r.status, 201, r.text);
});

test('a create in a Terminating namespace: 403 with cause NamespaceTerminating; a delete there still works', async () => {
  fake.setNamespace('going', 'Active');
  assert.equal((await create('going', gitTarget('before', 'going'))).status, 201);
  fake.setNamespace('going', 'Terminating');
  let r = await create('going', gitTarget('late', 'going'));
  // The informer sees the phase change through its watch; until then the create may still pass.
  await until(async () => {
    if (r.status === 403) return true;
    if (r.status === 201) await server.request('DELETE', `${GV}/namespaces/going/gittargets/late`);
    r = await create('going', gitTarget('late', 'going'));
    return r.status === 403;
  }, 'the create in the Terminating namespace to be refused', 10_000, 50);
  assert.deepEqual(r.body, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message: 'gittargets.configbutler.ai "late" is forbidden: unable to create new content in namespace going because it is being terminated',
    reason: 'Forbidden',
    details: { name: 'late', group: 'configbutler.ai', kind: 'gittargets', causes: [{ reason: 'NamespaceTerminating', message: 'namespace going is being terminated', field: 'metadata.namespace' }] },
    code: 403,
  });
  const generated = await create('going', { ...gitTarget('x', 'going'), metadata: { generateName: 'gen-' } });
  assert.equal(generated.status, 403, generated.text);
  assert.equal(generated.body.message, 'gittargets.configbutler.ai "gen-" is forbidden: unable to create new content in namespace going because it is being terminated');
  const d = await server.request('DELETE', `${GV}/namespaces/going/gittargets/before`);
  assert.equal(d.status, 200, d.text);
});

test('a deleted namespace is refused again, from the watch', async () => {
  fake.setNamespace('gone', 'Active');
  assert.equal((await create('gone', gitTarget('one', 'gone'))).status, 201);
  fake.setNamespace('gone', undefined);
  await until(async () => (await create('gone', gitTarget('two', 'gone'))).status === 404, 'the create in the deleted namespace to be refused', 10_000, 50);
});

test('kcp: each logical cluster has its own namespaces', async () => {
  // The double answers /clusters/<name>/api/v1/namespaces from the same set, so team-a exists there
  // and no-such-ns does not; what matters is that the workspace is asked, at its own URL.
  const from = fake.calls.length;
  const r = await create('no-such-ns', gitTarget('w', 'no-such-ns'), '/clusters/ws1');
  assert.equal(r.status, 404, r.text);
  assert.equal(r.body.message, 'namespaces "no-such-ns" not found');
  assert.equal((await create('team-a', gitTarget('w', 'team-a'), '/clusters/ws1')).status, 201);
  const asked = fake.calls.slice(from).map((c) => c.path).filter((p) => p.includes('/namespaces'));
  assert.ok(asked.every((p) => p.startsWith('/clusters/ws1/api/v1/namespaces')), asked.join('\n'));
  assert.ok(asked.includes('/clusters/ws1/api/v1/namespaces'), asked.join('\n'));
});

test('without a hosting cluster (no --kubeconfig, no sandbox) every namespace is admitted, as documented', async () => {
  const standalone = await startServer(['--controllers=none']);
  try {
    const r = await standalone.request('POST', `${GV}/namespaces/anything/gittargets`, { body: gitTarget('free', 'anything') });
    assert.equal(r.status, 201, r.text);
  } finally {
    await standalone.stop();
  }
});

test('while the namespaces cannot be read, a create waits 10 s for them, then is refused 403 (fail closed)', async () => {
  const broken = await startFakeHostingCluster();
  broken.namespacesStatus = 403;
  const s = await startServer(['--kubeconfig', broken.kubeconfigPath, '--register-apiservice=false', '--authentication-skip-lookup=true', '--controllers=none']);
  try {
    const t0 = Date.now();
    const r = await s.request('POST', `${GV}/namespaces/default/gittargets`, { body: gitTarget('early', 'default'), timeoutMs: 30_000 });
    const waited = Date.now() - t0;
    assert.equal(r.status, 403, r.text);
    assert.deepEqual(r.body, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'gittargets.configbutler.ai "early" is forbidden: not yet ready to handle request',
      reason: 'Forbidden', details: { name: 'early', group: 'configbutler.ai', kind: 'gittargets' }, code: 403,
    });
    // kube-apiserver's NamespaceLifecycle waits up to 10 s for its informer; bounded from below only
    // (a loaded machine answers later, never sooner).
    assert.ok(waited >= 9_500, `answered after ${waited} ms`);
    assert.deepEqual((await s.request('GET', `${GV}/gittargets`)).body.items, []);
    // Once the namespaces can be read, creates are admitted (the informer retries with backoff).
    broken.namespacesStatus = undefined;
    await until(async () => (await s.request('POST', `${GV}/namespaces/default/gittargets`, { body: gitTarget('later', 'default') })).status === 201,
      'a create once the namespaces are readable', 45_000, 200);
  } finally {
    await s.stop();
    await broken.close();
  }
});
