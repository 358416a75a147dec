// Delegated authorization against kcp: the hosting kubeconfig points at kcp (here
// the hosting-cluster double), and each request's SubjectAccessReviews go to its own logical
// cluster, `/clusters/<name>/apis/authorization.k8s.io/v1/subjectaccessreviews`, carrying the
// forwarded caller's identity. A shard request without a forwarded caller never asks about
// assert-author: it is denied before any SubjectAccessReview.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { startFakeHostingCluster, type FakeHostingCluster, type SARSpec } from '../support/fake-hosting-cluster.js';
import { GROUP_PATH, commitRequest, gitTarget, request, startServer, tempDir, type RequestOptions, type ServerProcess } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const crs = (ws: string) => `/clusters/${ws}${GROUP_PATH}/namespaces/team-a/commitrequests`;
const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
const alice: Array<[string, string]> = [['X-Remote-User', 'alice'], ['X-Remote-Group', 'team-a']];

let fake: FakeHostingCluster;
let srv: ServerProcess;
let shard: KeyPair;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);
const sars = (user: string) => fake.sars().filter((c) => (c.body as { spec: SARSpec }).spec.user === user)
  .map((c) => [c.path, (c.body as { spec: SARSpec }).spec.resourceAttributes?.verb]);

before(async () => {
  fake = await startFakeHostingCluster();
  fake.setNamespace('team-a', 'Active'); // the hosting cluster's namespace of the objects created below (NamespaceLifecycle)
  ctx.after(() => fake.close());
  // "kcp": alice and the shard are granted everything in ws-a (assert-author included), nothing elsewhere.
  fake.onSAR = (spec, path) => ({ allowed: path === `/clusters/ws-a${SAR_PATH}` && (spec.user === 'alice' || spec.user === 'kcp-shard') });
  const dir = tempDir(ctx, 'kcp-delegated-');
  const rhCA = makeCA('kcp-shard-ca');
  writeFileSync(join(dir, 'shard-ca.crt'), rhCA.certPem);
  srv = await startServer(ctx, makeCA('kcp-serving-ca'), ['--authorization-mode=Delegated', '--kubeconfig', fake.kubeconfigPath,
    '--authentication-skip-lookup=true', '--requestheader-client-ca-file', join(dir, 'shard-ca.crt'),
    '--requestheader-allowed-names', 'kcp-shard', '--kcp-shard-users', 'kcp-shard', '--wildcard-cluster-groups', 'kcp:shards']);
  shard = issueClientCert(rhCA, 'kcp-shard', ['kcp:shards']);
  const r = await call(`/clusters/ws-a${GROUP_PATH}/namespaces/team-a/gittargets`, { method: 'POST', cert: shard, headers: alice, body: gitTarget('tenants') });
  assert.equal(r.status, 201, r.text);
});

test('alice\'s request for ws-a is authorized by SubjectAccessReviews sent to /clusters/ws-a with her identity', async () => {
  const before = sars('alice').length;
  const r = await call(crs('ws-a'), { method: 'POST', cert: shard, headers: alice, body: commitRequest('by-alice', 'tenants', AUTHOR) });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(sars('alice').slice(before), [[`/clusters/ws-a${SAR_PATH}`, 'create'], [`/clusters/ws-a${SAR_PATH}`, 'assert-author']]);
  const last = fake.sars().at(-1)!.body as { spec: SARSpec };
  assert.deepEqual([last.spec.user, last.spec.groups], ['alice', ['team-a', 'system:authenticated']]);

  const b = await call(crs('ws-b'), { method: 'POST', cert: shard, headers: alice, body: commitRequest('by-alice', 'tenants') });
  assert.equal(b.status, 403, b.text);
  assert.deepEqual(sars('alice').at(-1), [`/clusters/ws-b${SAR_PATH}`, 'create']);
});

test('a shard request without a forwarded caller: create is asked of ws-a, assert-author is denied without asking', async () => {
  const r = await call(crs('ws-a'), { method: 'POST', cert: shard, body: commitRequest('by-shard', 'tenants', AUTHOR) });
  assert.equal(r.status, 403, r.text);
  assert.match(r.json().message, /User "kcp-shard" cannot assert-author resource "gittargets".*not its caller's/);
  assert.deepEqual(sars('kcp-shard'), [[`/clusters/ws-a${SAR_PATH}`, 'create']]);
});

test('the shard\'s wildcard discovery is allowed by --wildcard-cluster-groups without a SubjectAccessReview', async () => {
  const n = fake.sars().length;
  const d = await call(`/clusters/*${GROUP_PATH}`, { cert: shard });
  assert.equal(d.status, 200, d.text);
  assert.deepEqual(d.json().resources.map((x: any) => x.name).sort(), ['commitrequests', 'commitrequests/status', 'gittargets', 'gittargets/status', 'repositoryscans']);
  assert.equal(fake.sars().length, n);
});

test('without --kcp-server-url a kubeconfig whose server is kcp\'s base URL serves too: a bearer token is reviewed in the workspace it addresses', async () => {
  const TOKENREVIEW = '/apis/authentication.k8s.io/v1/tokenreviews';
  fake.onTokenReview = (token, path) => (token === 'carol-token' && path === `/clusters/ws-a${TOKENREVIEW}` ? { username: 'carol' } : false);
  const n = fake.tokenReviews().length;
  const a = await call(crs('ws-a'), { headers: [['Authorization', 'Bearer carol-token']] });
  assert.equal(a.status, 403, a.text);
  assert.match(a.json().message, /^commitrequests\.configbutler\.ai is forbidden: User "carol" cannot list resource "commitrequests"/);
  const b = await call(crs('ws-b'), { headers: [['Authorization', 'Bearer carol-token']] });
  assert.equal(b.status, 401, b.text);
  assert.deepEqual(fake.tokenReviews().slice(n).map((c) => c.path), [`/clusters/ws-a${TOKENREVIEW}`, `/clusters/ws-b${TOKENREVIEW}`]);
  assert.deepEqual(sars('carol'), [[`/clusters/ws-a${SAR_PATH}`, 'list']]);
});
