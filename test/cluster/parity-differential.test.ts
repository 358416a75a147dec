// Parity with kube-apiserver where a differential run found differences: the same request goes to
// our server and to the real kube-apiserver serving GitTarget from a CRD with our own schema
// (src/kcp/manifests.ts openAPIV3SchemaOf, the schema kcp gets too). Our server's hosting cluster is
// that kube-apiserver, so both see the same namespaces. Where we match, the Status must be equal;
// where we keep our answer, the difference is asserted exactly and docs/api.md#errors says why.
// Also the cosmetic ones: discovery's verb order, `kubectl explain`'s types for managedFields, and
// the wording of the new-finalizers error.
// Fast versions without a control plane: test/protocol/namespace-lifecycle.test.ts,
// test/protocol/parity.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, startServer, type StartedServer } from '../support/server.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { GROUP, GV, createGitTargetCRD, kubeRequest, outcome, show, type Answer } from './differential.js';
import { openAPIV3SchemaOf } from '../../src/kcp/manifests.js';
import { servedResources } from '../../src/api/resources.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';

const gts = (ns: string) => `${GV}/namespaces/${ns}/gittargets`;

let cp: ControlPlane;
let ours: StartedServer;

const kube = (method: string, path: string, body?: unknown, contentType?: string) => kubeRequest(cp, method, path, { body, contentType });

function both(method: string, path: string, body?: unknown, contentType?: string): Promise<[Answer, Answer]> {
  return Promise.all([
    ours.request(method, path, { body, timeoutMs: 30_000, ...(contentType ? { contentType } : {}) }),
    kube(method, path, body, contentType),
  ]);
}

before(async () => {
  cp = await startControlPlane();
  const def = servedResources({ configbutler: true, sandbox: false }).find((d) => d.plural === 'gittargets')!;
  await createGitTargetCRD(cp, openAPIV3SchemaOf(def));
  // Our server's hosting cluster is the same kube-apiserver: the NamespaceLifecycle admission reads its namespaces.
  ours = await startServer(['--kubeconfig', cp.admin.kubeconfig, '--register-apiservice=false', '--authentication-skip-lookup=true', '--controllers=none']);
});

after(async () => {
  await ours?.stop();
  await cp?.stop();
});

test('namespaces: a create in a missing namespace is the same 404; in a Terminating one the same 403 with cause NamespaceTerminating', async () => {
  let [mine, theirs] = await both('POST', gts('no-such-ns'), gitTarget('orphan', 'no-such-ns'));
  assert.equal(theirs.status, 404, theirs.text);
  assert.deepEqual(outcome(mine), outcome(theirs), show(mine, theirs));

  // A namespace held in Terminating by a ConfigMap with a finalizer.
  assert.equal((await cp.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'going' } })).status, 201);
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hold', finalizers: ['example.com/hold'] } };
  assert.equal((await cp.api('POST', '/api/v1/namespaces/going/configmaps', cm)).status, 201);
  [mine, theirs] = await both('POST', gts('going'), gitTarget('before', 'going'));
  assert.deepEqual([mine.status, theirs.status], [201, 201], show(mine, theirs));
  assert.equal((await cp.api('DELETE', '/api/v1/namespaces/going')).status, 200);
  await until('our server to see the namespace terminating', async () => {
    const r = await ours.request('POST', gts('going'), { body: gitTarget('probe', 'going') });
    if (r.status === 201) await ours.request('DELETE', `${gts('going')}/probe`);
    return r.status === 403;
  }, 30_000);
  for (const body of [gitTarget('late', 'going'), { ...gitTarget('x', 'going'), metadata: { generateName: 'gen-' } }]) {
    [mine, theirs] = await both('POST', gts('going'), body);
    assert.equal(theirs.status, 403, theirs.text);
    assert.deepEqual(outcome(mine), outcome(theirs), show(mine, theirs));
  }
  // Let the namespace go.
  await cp.api('PATCH', '/api/v1/namespaces/going/configmaps/hold', { metadata: { finalizers: null } }, undefined, 'application/merge-patch+json');
});

test('enum fields: the same 422 naming the supported values', async () => {
  for (const spec of [{ prune: { mode: 'Sometimes' } }, { commit: { mode: 'Later' } }]) {
    const [mine, theirs] = await both('POST', gts('default'), gitTarget('enum', 'default', { spec }));
    assert.equal(theirs.status, 422, theirs.text);
    assert.deepEqual(outcome(mine), outcome(theirs), show(mine, theirs));
  }
});

test('query parameters: the same codes and reasons (timeoutSeconds, continue, resourceVersion=abc), the same 504 for a too large resourceVersion', async () => {
  for (const q of ['timeoutSeconds=x', 'continue=abc&limit=1']) {
    const [mine, theirs] = await both('GET', `${gts('default')}?${q}`);
    assert.equal(theirs.status, 400, `${q}: ${theirs.text}`);
    assert.deepEqual([mine.status, mine.body?.reason], [theirs.status, theirs.body?.reason], `${q}${show(mine, theirs)}`);
  }
  const [mine, theirs] = await both('GET', `${gts('default')}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan`);
  assert.equal(theirs.status, 504, theirs.text);
  const shape = (a: Answer) => ({ status: a.status, reason: a.body?.reason, message: String(a.body?.message).replace(/current: \d+/, 'current: N'), causes: a.body?.details?.causes, retry: a.body?.details?.retryAfterSeconds });
  assert.deepEqual(shape(mine), shape(theirs), show(mine, theirs));
  // The same 400; ours names the rule instead of Go's strconv error (docs/api.md#errors).
  const [m, k] = await both('GET', `${gts('default')}?resourceVersion=abc`);
  assert.deepEqual([k.status, k.body?.reason], [400, 'BadRequest'], k.text);
  assert.equal(k.body.message, 'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax');
  assert.deepEqual(outcome(m), { status: 400, reason: 'BadRequest', message: 'invalid resource version "abc": must be a decimal number', name: undefined, kind: undefined, causes: [] });
});

test('label selector parse errors: the same 400 BadRequest (wording is ours, docs/api.md#errors)', async () => {
  for (const sel of ['a in (b', 'a=b=c', '!', 'a,,b']) {
    const [mine, theirs] = await both('GET', `${gts('default')}?labelSelector=${encodeURIComponent(sel)}`);
    assert.equal(theirs.status, 400, `${sel}: ${theirs.text}`);
    assert.deepEqual([mine.status, mine.body?.reason], [400, 'BadRequest'], `${sel}${show(mine, theirs)}`);
  }
});

test('unknown field under Strict: kube 400 strict decoding error, ours 422 with a cause per field (docs/api.md#errors)', async () => {
  const body = { ...gitTarget('strict', 'default'), bogus: 1 };
  const [mine, theirs] = await both('POST', `${gts('default')}?fieldValidation=Strict`, body);
  assert.deepEqual([theirs.status, theirs.body?.reason], [400, 'BadRequest'], theirs.text);
  assert.match(theirs.body.message, /strict decoding error: unknown field "bogus"/);
  assert.deepEqual(outcome(mine), {
    status: 422, reason: 'Invalid', message: 'GitTarget.configbutler.ai "strict" is invalid: bogus: Forbidden: unknown field "bogus"',
    name: 'strict', kind: 'GitTarget', causes: [{ reason: 'FieldValueForbidden', message: 'Forbidden: unknown field "bogus"', field: 'bogus' }],
  });
});

test('patch errors: JSON patch and merge patch failures have the same codes and reasons', async () => {
  let [mine, theirs] = await both('POST', gts('default'), gitTarget('patched', 'default'));
  assert.deepEqual([mine.status, theirs.status], [201, 201], show(mine, theirs));
  const path = `${gts('default')}/patched`;
  const cases: Array<[string, string]> = [
    ['application/json-patch+json', '[{"op":"replace","path":"/spec/nope/x","value":1}]'],
    ['application/json-patch+json', '[{"op":"test","path":"/spec/branch","value":"x"}]'],
    ['application/json-patch+json', '[{"op":"remove","path":"/spec/nope"}]'],
    ['application/merge-patch+json', '{"spec":"x"}'],
  ];
  for (const [type, patch] of cases) {
    [mine, theirs] = await both('PATCH', path, patch, type);
    assert.ok(theirs.status >= 400, `${patch}: ${theirs.text}`);
    assert.deepEqual([mine.status, mine.body?.reason], [theirs.status, theirs.body?.reason], `${type} ${patch}${show(mine, theirs)}`);
  }
});

test('an immediate DELETE: both 200; kube answers a Status for a CRD, we answer the deleted object (docs/api.md#errors)', async () => {
  let [mine, theirs] = await both('POST', gts('default'), gitTarget('gone', 'default'));
  assert.deepEqual([mine.status, theirs.status], [201, 201], show(mine, theirs));
  [mine, theirs] = await both('DELETE', `${gts('default')}/gone`);
  assert.deepEqual([mine.status, theirs.status], [200, 200], show(mine, theirs));
  assert.deepEqual([mine.body.kind, mine.body.metadata.name], ['GitTarget', 'gone']);
  assert.deepEqual([theirs.body.kind, theirs.body.status, theirs.body.details?.name, theirs.body.details?.group, theirs.body.details?.kind],
    ['Status', 'Success', 'gone', GROUP, 'gittargets'], theirs.text);
});

test('discovery: the same verbs, in the same order, for gittargets and gittargets/status (legacy and aggregated)', async () => {
  const [mine, theirs] = await both('GET', GV);
  const verbs = (a: Answer) => a.body.resources.filter((r: any) => r.name.startsWith('gittargets')).map((r: any) => `${r.name}: ${r.verbs.join(',')}`);
  assert.deepEqual(verbs(theirs), ['gittargets: delete,deletecollection,get,list,patch,create,update,watch', 'gittargets/status: get,patch,update'], theirs.text);
  assert.deepEqual(verbs(mine), verbs(theirs), show(mine, theirs));
  const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
  const aggregated = async (get: (p: string) => Promise<Answer>) => {
    const group = (await get('/apis')).body.items.find((g: any) => g.metadata.name === GROUP);
    const gt = group.versions[0].resources.find((r: any) => r.resource === 'gittargets');
    return [gt.verbs.join(','), ...gt.subresources.map((s: any) => `${s.subresource}: ${s.verbs.join(',')}`)];
  };
  const [a, b] = await Promise.all([aggregated((p) => ours.request('GET', p, { headers: { accept } })), aggregated((p) => kubeRequest(cp, 'GET', p, { headers: { accept } }))]);
  assert.deepEqual(b, ['delete,deletecollection,get,list,patch,create,update,watch', 'status: get,patch,update']);
  assert.deepEqual(a, b);
});

test('kubectl explain: the same types for metadata.managedFields (ManagedFieldsEntry, FieldsV1, time a string)', async (t) => {
  const types = async (kubeconfig: string) => {
    const k = new Kubectl(kubectlBinary(), kubeconfig);
    t.after(() => k.cleanup());
    const r = await k.run(['explain', 'gittargets.metadata.managedFields']);
    assert.equal(r.code, 0, r.stderr);
    // The field's own line and each field's name and type; the descriptions are each server's own.
    return r.stdout.split('\n').filter((l) => /^FIELD:/.test(l) || /^ {2}\S+\t<[^>]+>$/.test(l)).map((l) => l.trim().replace(/\s+/g, ' '));
  };
  // kube-apiserver publishes a new CRD's OpenAPI a moment after it is established.
  await until('kube-apiserver publishes the CRD in OpenAPI v3', async () => (await kube('GET', '/openapi/v3')).text.includes(`apis/${GROUP}/v1alpha1`), 60_000);
  const theirs = await types(cp.admin.kubeconfig);
  assert.deepEqual(theirs, [
    'FIELD: managedFields <[]ManagedFieldsEntry>',
    'apiVersion <string>', 'fieldsType <string>', 'fieldsV1 <FieldsV1>', 'manager <string>', 'operation <string>', 'subresource <string>', 'time <string>',
  ]);
  assert.deepEqual(await types(ours.kubeconfig), theirs);
});

test('finalizers: adding one to an object being deleted is the same 422, the new finalizers listed as kube words them', async () => {
  const body = { ...gitTarget('fin', 'default'), metadata: { name: 'fin', namespace: 'default', finalizers: ['example.com/keep'] } };
  let [mine, theirs] = await both('POST', gts('default'), body);
  assert.deepEqual([mine.status, theirs.status], [201, 201], show(mine, theirs));
  [mine, theirs] = await both('DELETE', `${gts('default')}/fin`);
  assert.deepEqual([mine.status, theirs.status], [200, 200], show(mine, theirs));
  const patch = { metadata: { finalizers: ['example.com/keep', 'example.com/z', 'example.com/a'] } };
  [mine, theirs] = await both('PATCH', `${gts('default')}/fin`, patch, 'application/merge-patch+json');
  assert.equal(theirs.status, 422, theirs.text);
  const detail = 'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/a", "example.com/z"}';
  assert.equal(theirs.body.message, `GitTarget.configbutler.ai "fin" is invalid: metadata.finalizers: ${detail}`);
  // kube-apiserver validates a CRD object's metadata twice on update, so its Status lists the same
  // cause twice (the message names it once); ours lists it once (docs/api.md#errors).
  const cause = { reason: 'FieldValueForbidden', message: detail, field: 'metadata.finalizers' };
  assert.deepEqual(theirs.body.details.causes, [cause, cause], theirs.text);
  assert.deepEqual(outcome(mine), { ...(outcome(theirs) as object), causes: [cause] }, show(mine, theirs));
  // Let it go.
  [mine, theirs] = await both('PATCH', `${gts('default')}/fin`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
  assert.deepEqual([mine.status, theirs.status], [200, 200], show(mine, theirs));
});
