// Protocol parity, differentially: the same requests go to our server and to the real
// kube-apiserver of the test control plane, which serves GitTarget from a CRD, and the answers must
// agree — label-key validation (objects and selectors, code and exact message), escaped field
// selectors, Tables and PartialObjectMetadata asked for as meta.k8s.io/v1beta1, and the deprecated
// /watch/ paths. Deliberate differences: kube answers OpenAPI v3 in protobuf when asked (we produce
// no protobuf and answer 406 unless JSON is acceptable; not compared), and a POST to a CRD's /watch/
// path is a watch there, a 405 here (as kube's built-in resources answer).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, startServer, type StartedServer } from '../support/server.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { GV, createGitTargetCRD, kubeRequest, outcome, type Answer } from './differential.js';

const BASE = `${GV}/namespaces/default/gittargets`;

let cp: ControlPlane;
let ours: StartedServer;

const kube = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => kubeRequest(cp, method, path, { headers, body });

async function both(method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<[Answer, Answer]> {
  return Promise.all([ours.request(method, path, { headers: { accept: 'application/json', ...headers }, body, timeoutMs: 30_000 }), kube(method, path, headers, body)]);
}

before(async () => {
  [cp, ours] = await Promise.all([startControlPlane(), startServer(['--controllers=none'])]);
  // No schema: these comparisons are about the protocol, not about validating spec.
  await createGitTargetCRD(cp, { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } });
  for (const name of ['one', 'two']) {
    const [a, b] = await both('POST', BASE, {}, gitTarget(name, 'default'));
    assert.deepEqual([a.status, b.status], [201, 201], `${a.text}\n${b.text}`);
  }
});

after(async () => {
  await ours?.stop();
  await cp?.stop();
});

test('label keys and values: the same 422 Invalid, message and causes, for objects; the same 400 for selectors', async () => {
  const k64 = 'a'.repeat(64);
  const labelled = (name: string, labels?: Record<string, string>, annotations?: Record<string, string>) => {
    const body = gitTarget(name, 'default');
    body.metadata.labels = labels;
    if (annotations) body.metadata.annotations = annotations;
    return body;
  };
  const cases: Array<[string, any]> = [
    ['64-byte key', labelled('k64', { [k64]: 'x' })],
    ['254-byte prefix', labelled('p254', { [`${'b'.repeat(254)}/a`]: 'x' })],
    ['key breaking two rules', labelled('two', { [`-${k64}`]: 'x' })],
    ['empty prefix', labelled('ep', { '/a': 'x' })],
    ['two slashes', labelled('ts', { 'a/b/c': 'x' })],
    ['empty name part', labelled('en', { 'a/': 'x' })],
    ['upper-case prefix', labelled('up', { 'A.com/x': 'x' })],
    ['64-byte value', labelled('v64', { a: 'v'.repeat(64) })],
    ['bad value', labelled('bv', { a: '-x-' })],
    ['64-byte annotation key', labelled('a64', undefined, { [k64]: 'x' })],
  ];
  for (const [what, body] of cases) {
    const [mine, theirs] = await both('POST', BASE, {}, body);
    assert.equal(theirs.status, 422, `${what}: kube-apiserver answered ${theirs.text}`);
    assert.deepEqual(outcome(mine), outcome(theirs), `${what}\nours: ${mine.text}\nkube: ${theirs.text}`);
  }
  for (const sel of [`${k64}=x`, k64, `${'b'.repeat(254)}/a`, `-${k64}`]) {
    const [mine, theirs] = await both('GET', `${BASE}?labelSelector=${encodeURIComponent(sel)}`);
    assert.equal(theirs.status, 400, `${sel}: ${theirs.text}`);
    assert.deepEqual(outcome(mine), outcome(theirs), `selector ${sel}\nours: ${mine.text}\nkube: ${theirs.text}`);
  }
});

test('escaped field selectors: accepted (matching no name) or refused alike', async () => {
  for (const fs of ['metadata.name=\\,', 'metadata.name=\\=', 'metadata.name=\\\\', 'metadata.name=a\\,b,metadata.namespace=default', 'metadata.name=,', ',', 'metadata.name!=\\,', 'metadata.name=one,', 'metadata.name=\\a', 'metadata.name=a=b', 'metadata.name=x\\', 'metadata.name', 'spec.x=1', 'foo=\\a']) {
    const [mine, theirs] = await both('GET', `${BASE}?fieldSelector=${encodeURIComponent(fs)}`);
    assert.deepEqual(outcome(mine), outcome(theirs), `${fs}\nours: ${mine.text}\nkube: ${theirs.text}`);
    if (theirs.status === 200) assert.deepEqual(mine.body.items.map((i: any) => i.metadata.name), theirs.body.items.map((i: any) => i.metadata.name), fs);
  }
});

test('Table and PartialObjectMetadata(List) asked for as v1beta1 come back as v1beta1 on both', async () => {
  const shape = (a: Answer) => ({
    kind: a.body.kind,
    apiVersion: a.body.apiVersion,
    rows: a.body.rows?.map((r: any) => `${r.object.kind} ${r.object.apiVersion} ${r.object.metadata.name}`),
    items: a.body.items?.map((i: any) => `${i.kind} ${i.apiVersion} ${i.metadata.name}`),
  });
  for (const [path, accept] of [
    [BASE, 'application/json;as=Table;v=v1beta1;g=meta.k8s.io'],
    [`${BASE}/one`, 'application/json;as=Table;v=v1beta1;g=meta.k8s.io'],
    [BASE, 'application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io'],
    [`${BASE}/one`, 'application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io'],
  ] as const) {
    const [mine, theirs] = await both('GET', path, { accept });
    assert.equal(theirs.status, 200, theirs.text);
    assert.deepEqual(shape(mine), shape(theirs), `${path} as ${accept}\nours: ${mine.text.slice(0, 400)}\nkube: ${theirs.text.slice(0, 400)}`);
  }
});

test('the deprecated /watch/ paths: the same events, and the same refusals', async () => {
  const events = (a: Answer) => a.text.split('\n').filter(Boolean).map((l) => {
    const ev = JSON.parse(l);
    return `${ev.type} ${ev.object.metadata.name}`;
  });
  for (const path of [`${GV}/watch/namespaces/default/gittargets/one?timeoutSeconds=1`, `${GV}/watch/namespaces/default/gittargets?timeoutSeconds=1`, `${GV}/watch/gittargets?timeoutSeconds=1&watch=false`]) {
    const [mine, theirs] = await both('GET', path);
    assert.equal(theirs.status, 200, theirs.text);
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual(events(mine).sort(), events(theirs).sort(), path);
  }
  for (const path of [`${GV}/watch/namespaces/default/gittargets/one?timeoutSeconds=1&fieldSelector=metadata.name%3Dtwo`, `${GV}/watch/namespaces/default/gittargets/one/status?timeoutSeconds=1`]) {
    const [mine, theirs] = await both('GET', path);
    assert.deepEqual(outcome(mine), outcome(theirs), `${path}\nours: ${mine.text}\nkube: ${theirs.text}`);
  }
  // Neither publishes the /watch/ paths in OpenAPI (kube does not for CRDs).
  await until('kube-apiserver publishes the CRD in OpenAPI v3', async () => (await kube('GET', '/openapi/v3')).text.includes('apis/configbutler.ai/v1alpha1'), 60_000);
  const v3paths = async (get: (p: string) => Promise<Answer>) => {
    const root = (await get('/openapi/v3')).body;
    return Object.keys((await get(root.paths['apis/configbutler.ai/v1alpha1'].serverRelativeURL)).body.paths).filter((p) => p.includes('/watch/'));
  };
  assert.deepEqual(await v3paths((p) => kube('GET', p)), []);
  assert.deepEqual(await v3paths((p) => ours.request('GET', p)), []);
  // A deliberate difference: for a CRD, kube-apiserver's handler turns any method on a /watch/ path
  // into a watch (its verb is "watch"); built-in resources answer 405, and so do we.
  const post = `${GV}/watch/namespaces/default/gittargets?timeoutSeconds=1`;
  const [mine, theirs] = await both('POST', post, {}, gitTarget('w', 'default'));
  assert.deepEqual([mine.status, mine.body?.reason, theirs.status], [405, 'MethodNotAllowed', 200], `POST ${post}\nours: ${mine.text}\nkube: ${theirs.text}`);
});
