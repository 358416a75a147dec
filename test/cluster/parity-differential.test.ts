// Parity with kube-apiserver where a differential run found differences: the same request goes to
// our server and to the real kube-apiserver serving GitTarget from a CRD with our own schema
// (src/kcp/manifests.ts openAPIV3SchemaOf, the schema kcp gets too). Our server's hosting cluster is
// that kube-apiserver, so both see the same namespaces. Where we match, the Status must be equal;
// where we keep our answer, the difference is asserted exactly and docs/api.md#errors says why.
// Fast versions without a control plane: test/protocol/namespace-lifecycle.test.ts,
// test/protocol/parity.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { gitTarget, startServer, type StartedServer } from '../support/server.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { openAPIV3SchemaOf } from '../../src/kcp/manifests.js';
import { servedResources } from '../../src/api/resources.js';

const GROUP = 'configbutler.ai';
const GV = `/apis/${GROUP}/v1alpha1`;
const gts = (ns: string) => `${GV}/namespaces/${ns}/gittargets`;

interface Answer {
  status: number;
  body: any;
  text: string;
}

let cp: ControlPlane;
let ours: StartedServer;

function kube(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = httpsRequest(`${cp.url}${path}`, {
      method, ca: cp.ca.certPem, cert: cp.admin.cert.certPem, key: cp.admin.cert.keyPem, agent: false,
      headers: { accept: 'application/json', ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, text });
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

function both(method: string, path: string, body?: unknown, contentType?: string): Promise<[Answer, Answer]> {
  return Promise.all([
    ours.request(method, path, { body, timeoutMs: 30_000, ...(contentType ? { contentType } : {}) }),
    kube(method, path, body, contentType),
  ]);
}

/** Status code, and for a failure the Status's reason, message, details' name/kind and causes. */
function outcome(a: Answer): unknown {
  if (a.status < 300) return { status: a.status };
  const d = a.body?.details ?? {};
  return { status: a.status, reason: a.body?.reason, message: a.body?.message, name: d.name, kind: d.kind, causes: d.causes ?? [] };
}

const show = (mine: Answer, theirs: Answer) => `\nours: ${mine.text.slice(0, 600)}\nkube: ${theirs.text.slice(0, 600)}`;

before(async () => {
  cp = await startControlPlane();
  const def = servedResources({ configbutler: true, sandbox: false }).find((d) => d.plural === 'gittargets')!;
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gittargets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'gittargets', singular: 'gittarget', kind: 'GitTarget', listKind: 'GitTargetList' },
      versions: [{ name: 'v1alpha1', served: true, storage: true, schema: { openAPIV3Schema: openAPIV3SchemaOf(def) }, subresources: { status: {} } }],
    },
  };
  const r = await cp.api('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  assert.equal(r.status, 201, r.text);
  await until('the CRD is established and served', async () => (await cp.api('GET', gts('default'))).status === 200, 60_000);
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
