// Delegated mode through the running server: `serve --authorization-mode=Delegated --kubeconfig
// <fake hosting cluster>`, with the fake also serving kube-system/extension-apiserver-authentication.
// Asserts the exact SubjectAccessReview and TokenReview JSON the server sends, caching within the
// TTLs, fail-closed on a 500 or a hanging SubjectAccessReview, and CA rotation without restart.
import { X509Certificate, createHash } from 'node:crypto';
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { issueClientCert, makeCA, type CA, type KeyPair } from '../support/pki.js';
import { startFakeHostingCluster, FAKE_SA_TOKEN, type FakeHostingCluster, type RecordedCall, type SARSpec } from '../support/fake-hosting-cluster.js';
import { ASSERT_AUTHOR_RULE, GROUP_PATH, commitRequest, request, startServer, type RequestOptions, type ServerProcess } from './harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const TTL_MS = 2000;
const SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const CRS = `${GROUP_PATH}/namespaces/team-a/commitrequests`;
const EMAIL_CLAIM = 'configbutler.ai/claims/email';
const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let fake: FakeHostingCluster;
let srv: ServerProcess;
let clientCA: CA;
let rh1: CA;
let rh2: CA;
let proxy1: KeyPair;
let proxy2: KeyPair;
let hanging: Promise<{ status: number; json: any; ms: number }>;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);

const cmData = (rh: CA) => ({
  'client-ca-file': clientCA.certPem,
  'requestheader-client-ca-file': rh.certPem,
  'requestheader-allowed-names': '["front-proxy-client"]',
  'requestheader-username-headers': '["X-Remote-User"]',
  'requestheader-group-headers': '["X-Remote-Group"]',
  'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
  'requestheader-uid-headers': '["X-Remote-Uid"]',
});

/** alice as the aggregator presents her. */
const aliceHeaders: Array<[string, string]> = [['X-Remote-User', 'alice'], ['X-Remote-Uid', 'u-alice'], ['X-Remote-Group', 'devs'],
  ['X-Remote-Group', 'ops'], ['X-Remote-Extra-Configbutler.ai%2Fclaims%2Femail', 'alice@example.com'], ['X-Remote-Extra-Scopes%2Fa', 'x']];
const asUser = (user: string, groups: string[] = []): Array<[string, string]> =>
  [['X-Remote-User', user], ...groups.map((g): [string, string] => ['X-Remote-Group', g])];

function sarsOf(user: string): RecordedCall[] {
  return fake.sars().filter((c) => (c.body as { spec: SARSpec }).spec.user === user);
}

before(async () => {
  fake = await startFakeHostingCluster();
  fake.setNamespace('team-a', 'Active'); // the hosting cluster's namespace of the objects created below (NamespaceLifecycle)
  ctx.after(() => fake.close());
  clientCA = makeCA('hosting-client-ca');
  rh1 = makeCA('front-proxy-ca-1');
  rh2 = makeCA('front-proxy-ca-2');
  proxy1 = issueClientCert(rh1, 'front-proxy-client');
  proxy2 = issueClientCert(rh2, 'front-proxy-client');
  fake.setConfigMap(cmData(rh1));
  fake.onSAR = (spec) => {
    if (spec.user === 'hank') return 'hang';
    if (spec.user === 'erin') return { status: 500 };
    const ra = spec.resourceAttributes;
    if (ra?.verb === 'assert-author') return { allowed: spec.user === 'alice' && ra.name === 'tenants' };
    if (spec.user === 'dave') return { allowed: false, denied: true, reason: 'dave is suspended' };
    return { allowed: true };
  };
  fake.onTokenReview = (token) => (token === 'good-token'
    ? { username: 'system:serviceaccount:editors:web-editor', uid: 'u-sa', groups: ['system:serviceaccounts', 'system:serviceaccounts:editors'] }
    : false);
  const serverCA = makeCA('e2e-serving-ca');
  srv = await startServer(ctx, serverCA, ['--authorization-mode=Delegated', '--kubeconfig', fake.kubeconfigPath,
    `--authorization-webhook-cache-authorized-ttl=${TTL_MS}ms`, `--authorization-webhook-cache-unauthorized-ttl=${TTL_MS}ms`]);
  // A SubjectAccessReview that never answers: the server's 10 s hosting-cluster timeout must deny.
  // Started first so the wait overlaps the other tests; awaited in the last test.
  const t0 = Date.now();
  hanging = call(CRS, { cert: proxy1, headers: asUser('hank') }).then((r) => ({ status: r.status, json: r.json(), ms: Date.now() - t0 }));
});

test('ordinary request: the exact SubjectAccessReview JSON, sent with the kubeconfig credentials', async () => {
  const r = await call(CRS, { cert: proxy1, headers: aliceHeaders });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json().items, []);
  const sars = sarsOf('alice');
  assert.equal(sars.length, 1);
  assert.equal(sars[0]!.path, SAR_PATH);
  assert.equal(sars[0]!.authorization, `Bearer ${FAKE_SA_TOKEN}`);
  assert.equal(sars[0]!.raw, '{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":'
    + '{"namespace":"team-a","verb":"list","group":"configbutler.ai","version":"v1alpha1","resource":"commitrequests"},'
    + '"user":"alice","groups":["devs","ops","system:authenticated"],'
    + '"extra":{"configbutler.ai/claims/email":["alice@example.com"],"scopes/a":["x"]},"uid":"u-alice"}}');

  // A client certificate from the ConfigMap's client-ca-file: user = CN, groups = O, and the
  // certificate's credential id as extra (as kube-apiserver's x509 authenticator).
  const carol = issueClientCert(clientCA, 'carol', ['qa']);
  const carolID = `X509SHA256=${createHash('sha256').update(new X509Certificate(carol.certPem).raw).digest('hex')}`;
  const c = await call(`${CRS}/nothing-here`, { cert: carol, headers: asUser('alice') });
  assert.equal(c.status, 404, c.text);
  assert.deepEqual((sarsOf('carol')[0]!.body as { spec: unknown }).spec, {
    resourceAttributes: { namespace: 'team-a', verb: 'get', group: 'configbutler.ai', version: 'v1alpha1', resource: 'commitrequests', name: 'nothing-here' },
    user: 'carol', groups: ['qa', 'system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': [carolID] },
  });

  // /healthz and system:masters never reach the hosting cluster.
  const before = fake.sars().length;
  assert.equal((await call('/healthz')).status, 200);
  assert.equal((await call(CRS, { cert: proxy1, headers: asUser('aggregator', ['system:masters']) })).status, 200);
  assert.equal(fake.sars().length, before);
});

test('assert-author: the exact SubjectAccessReview; allowed → 201 with the submitter, denied → 403 naming the rule', async () => {
  const n = sarsOf('alice').length;
  const r = await call(CRS, { method: 'POST', cert: proxy1, headers: aliceHeaders, body: commitRequest('authored', 'tenants', AUTHOR) });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json().status.submitter, { username: 'alice', uid: 'u-alice', groups: ['devs', 'ops', 'system:authenticated'],
    extra: { [EMAIL_CLAIM]: ['alice@example.com'] } });
  const sars = sarsOf('alice').slice(n);
  assert.equal(sars.length, 2);
  assert.deepEqual(sars.map((c) => c.path), [SAR_PATH, SAR_PATH]);
  const identity = '"user":"alice","groups":["devs","ops","system:authenticated"],'
    + '"extra":{"configbutler.ai/claims/email":["alice@example.com"],"scopes/a":["x"]},"uid":"u-alice"}}';
  assert.equal(sars[0]!.raw, '{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":'
    + '{"namespace":"team-a","verb":"create","group":"configbutler.ai","version":"v1alpha1","resource":"commitrequests"},' + identity);
  assert.equal(sars[1]!.raw, '{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":'
    + '{"namespace":"team-a","verb":"assert-author","group":"configbutler.ai","version":"v1alpha1","resource":"gittargets","name":"tenants"},' + identity);

  const d = await call(CRS, { method: 'POST', cert: proxy1, headers: aliceHeaders, body: commitRequest('authored-other', 'other', AUTHOR) });
  assert.equal(d.status, 403, d.text);
  assert.equal(d.json().message, 'gittargets.configbutler.ai "other" is forbidden: User "alice" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + `setting spec.author on a CommitRequest for GitTarget "other" requires a Role rule ${ASSERT_AUTHOR_RULE('other')}`);
  const last = sarsOf('alice').at(-1)!;
  assert.deepEqual((last.body as { spec: SARSpec }).spec.resourceAttributes,
    { namespace: 'team-a', verb: 'assert-author', group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets', name: 'other' });
  assert.equal(sarsOf('alice').length, n + 3, 'the create SAR was answered from the cache');
});

test('bearer token: the exact TokenReview, and the reviewed user in the SubjectAccessReview', async () => {
  const sa = 'system:serviceaccount:editors:web-editor';
  const r = await call(CRS, { headers: [['Authorization', 'Bearer good-token']] });
  assert.equal(r.status, 200, r.text);
  const trs = fake.tokenReviews();
  assert.equal(trs.length, 1);
  assert.equal(trs[0]!.raw, '{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"good-token"}}');
  assert.equal(trs[0]!.authorization, `Bearer ${FAKE_SA_TOKEN}`);
  assert.deepEqual((sarsOf(sa)[0]!.body as { spec: SARSpec }), {
    kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: {},
    spec: { resourceAttributes: { namespace: 'team-a', verb: 'list', group: 'configbutler.ai', version: 'v1alpha1', resource: 'commitrequests' },
      user: sa, groups: ['system:serviceaccounts', 'system:serviceaccounts:editors', 'system:authenticated'], uid: 'u-sa' },
  });
  const bad = await call(CRS, { headers: [['Authorization', 'Bearer bad-token']] });
  assert.equal(bad.status, 401, bad.text);
  assert.equal(bad.json().reason, 'Unauthorized');
});

test('cached decisions are not re-asked within their TTL, and are after it', async () => {
  // frank is allowed, dave denied; each asked once.
  const t0 = Date.now();
  const f1 = await call(CRS, { cert: proxy1, headers: asUser('frank') });
  const d1 = await call(CRS, { cert: proxy1, headers: asUser('dave') });
  const answered = Date.now(); // both answers are cached from before this moment
  assert.equal(f1.status, 200, f1.text);
  assert.equal(d1.status, 403, d1.text);
  assert.equal(d1.json().message, 'commitrequests.configbutler.ai is forbidden: User "dave" cannot list resource "commitrequests" in API group "configbutler.ai" in the namespace "team-a": dave is suspended');
  for (let i = 0; i < 3; i++) {
    assert.equal((await call(CRS, { cert: proxy1, headers: asUser('frank') })).status, 200);
    assert.equal((await call(CRS, { cert: proxy1, headers: asUser('dave') })).status, 403);
  }
  assert.ok(Date.now() - t0 < TTL_MS, 'the repeated requests ran within the TTL');
  assert.equal(sarsOf('frank').length, 1);
  assert.equal(sarsOf('dave').length, 1);
  // A different request of the same user is a different decision.
  assert.equal((await call(`${CRS}/x`, { cert: proxy1, headers: asUser('frank') })).status, 404);
  assert.equal(sarsOf('frank').length, 2);

  await sleep(answered + TTL_MS + 50 - Date.now());
  assert.equal((await call(CRS, { cert: proxy1, headers: asUser('frank') })).status, 200);
  assert.equal((await call(CRS, { cert: proxy1, headers: asUser('dave') })).status, 403);
  assert.equal(sarsOf('frank').length, 3);
  assert.equal(sarsOf('dave').length, 2);
});

test('a SubjectAccessReview answering 500 denies (403), is not cached, and fails assert-author closed', async () => {
  const r = await call(CRS, { cert: proxy1, headers: asUser('erin') });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json().reason, 'Forbidden');
  assert.equal(r.json().message, 'commitrequests.configbutler.ai is forbidden: User "erin" cannot list resource "commitrequests" in API group "configbutler.ai" in the namespace "team-a": '
    + `the authorization check could not be made: SubjectAccessReview failed: POST ${SAR_PATH}: HTTP 500: fake failure`);
  assert.equal((await call(CRS, { cert: proxy1, headers: asUser('erin') })).status, 403);
  assert.equal(sarsOf('erin').length, 2, 'errors are not cached');

  // Even when the create itself is allowed, a failing assert-author check denies.
  fake.onSAR = ((prev) => (spec: SARSpec, path: string) => (spec.user === 'erin' && spec.resourceAttributes?.verb === 'create' ? { allowed: true } : prev(spec, path)))(fake.onSAR);
  const c = await call(CRS, { method: 'POST', cert: proxy1, headers: asUser('erin'), body: commitRequest('erin-authored', 'tenants', AUTHOR) });
  assert.equal(c.status, 403, c.text);
  assert.equal(c.json().message, 'gittargets.configbutler.ai "tenants" is forbidden: User "erin" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + `the authorization check could not be made: SubjectAccessReview failed: POST ${SAR_PATH}: HTTP 500: fake failure`);
});

test('a rotated requestheader CA in the ConfigMap is used without restart', async () => {
  assert.equal((await call(CRS, { cert: proxy2, headers: asUser('frank') })).status, 401, 'the new CA is not trusted yet');
  fake.setConfigMap(cmData(rh2));
  const deadline = Date.now() + 10_000;
  let status = 0;
  while (Date.now() < deadline) {
    status = (await call(CRS, { cert: proxy2, headers: asUser('frank') })).status;
    if (status !== 401) break;
    await sleep(20);
  }
  assert.equal(status, 200, 'a front proxy certificate of the new CA is believed');
  const old = await call(CRS, { cert: proxy1, headers: asUser('frank') });
  assert.equal(old.status, 401, old.text);
  assert.match(srv.logs(), /requestheader CA loaded from kube-system\/extension-apiserver-authentication/);
});

test('a kcp workspace request (/clusters/<name>/...) is authorized by that workspace, assert-author included', async () => {
  const base = `/clusters/ws1${CRS}`;
  const r = await call(base, { cert: proxy2, headers: asUser('gina') });
  assert.equal(r.status, 200, r.text);
  const c = await call(base, { method: 'POST', cert: proxy2, headers: asUser('gina'), body: commitRequest('ws-authored', 'tenants', AUTHOR) });
  assert.equal(c.status, 403, c.text);
  assert.deepEqual(sarsOf('gina').map((x) => [x.path, (x.body as { spec: SARSpec }).spec.resourceAttributes!.verb]), [
    [`/clusters/ws1${SAR_PATH}`, 'list'], [`/clusters/ws1${SAR_PATH}`, 'create'], [`/clusters/ws1${SAR_PATH}`, 'assert-author'],
  ]);
  // The wildcard is never derived from a grant (of a workspace or of the hosting cluster): no
  // SubjectAccessReview is sent for it, and without a wildcard group it is denied.
  const w = await call(`/clusters/*${GROUP_PATH}/commitrequests`, { cert: proxy2, headers: asUser('gina') });
  assert.equal(w.status, 403, w.text);
  assert.equal(w.json().message, 'commitrequests.configbutler.ai is forbidden: User "gina" cannot list resource "commitrequests" in API group "configbutler.ai" at the cluster scope: '
    + 'access across all logical clusters (/clusters/*) needs membership in system:masters or in a group named by --wildcard-cluster-groups');
  assert.equal(sarsOf('gina').length, 3);
});

test('a SubjectAccessReview that never answers denies after the hosting-cluster timeout', async () => {
  const r = await hanging;
  assert.equal(r.status, 403);
  assert.equal(r.json.message, 'commitrequests.configbutler.ai is forbidden: User "hank" cannot list resource "commitrequests" in API group "configbutler.ai" in the namespace "team-a": '
    + `the authorization check could not be made: SubjectAccessReview failed: POST ${SAR_PATH}: no answer within 10s`);
  assert.ok(r.ms >= 9_900 && r.ms < 15_000, `answered after ${r.ms} ms`);
  assert.equal(sarsOf('hank').length, 1);
});
