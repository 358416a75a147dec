// Through the running server (RBAC mode): status.submitter is the server's, never the client's;
// dryRun=All still checks assert-author; anonymous requests get 401 except on /healthz.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { ASSERT_AUTHOR_RULE, GROUP_PATH, REPO_ROOT, commitRequest, gitTarget, request, startServer, tempDir, type RequestOptions, type ServerProcess } from './harness.js';

const POLICY = join(REPO_ROOT, 'test/auth/fixtures/rbac-policy.yaml');
const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let srv: ServerProcess;
let admin: KeyPair;
let alice: KeyPair;
let bob: KeyPair;
const CRS = `${GROUP_PATH}/namespaces/team-a/commitrequests`;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);
const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
const FORGED = { username: 'mallory', uid: 'u-mallory', groups: ['system:masters'], extra: { 'configbutler.ai/claims/email': ['mallory@example.com'] } };

before(async () => {
  const dir = tempDir(ctx, 'auth-e2e-submitter-');
  const serverCA = makeCA('e2e-serving-ca');
  const clientCA = makeCA('e2e-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'),
    '--authorization-mode=RBAC', '--authorization-policy-file', POLICY]);
  admin = issueClientCert(clientCA, 'e2e-admin');
  alice = issueClientCert(clientCA, 'alice', ['team-a-editors']);
  bob = issueClientCert(clientCA, 'bob');
  const r = await call(`${GROUP_PATH}/namespaces/team-a/gittargets`, { method: 'POST', cert: admin, body: gitTarget('tenants') });
  assert.equal(r.status, 201, r.text);
});

test('create with a forged status.submitter: the server records the caller', async () => {
  const body = { ...commitRequest('forged', 'tenants'), status: { submitter: FORGED, sha: 'deadbeef' } };
  const r = await call(CRS, { method: 'POST', cert: alice, body });
  assert.equal(r.status, 201, r.text);
  const want = { username: 'alice', groups: ['team-a-editors', 'system:authenticated'] };
  assert.deepEqual(r.json().status, { submitter: want });
  const g = await call(`${CRS}/forged`, { cert: alice });
  assert.equal(g.status, 200);
  assert.deepEqual(g.json().status, { submitter: want });
});

test('PUT and PATCH (main resource and /status) cannot change status.submitter', async () => {
  const want = { username: 'alice', groups: ['team-a-editors', 'system:authenticated'] };
  const cur = (await call(`${CRS}/forged`, { cert: admin })).json();

  // PUT /status by a status writer: other status fields change, the submitter does not.
  const put = await call(`${CRS}/forged/status`, { method: 'PUT', cert: admin, body: { ...cur, status: { submitter: FORGED, sha: 'abc1234' } } });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(put.json().status, { submitter: want, sha: 'abc1234' });

  // PUT /status removing the submitter: it stays.
  const cur2 = put.json();
  const put2 = await call(`${CRS}/forged/status`, { method: 'PUT', cert: admin, body: { ...cur2, status: { sha: 'abc1234' } } });
  assert.equal(put2.status, 200, put2.text);
  assert.deepEqual(put2.json().status, { submitter: want, sha: 'abc1234' });

  // Merge patch and JSON patch on /status.
  const mp = await call(`${CRS}/forged/status`, { method: 'PATCH', cert: admin, contentType: 'application/merge-patch+json',
    body: { status: { submitter: { username: 'mallory', groups: ['system:masters'] }, branch: 'main' } } });
  assert.equal(mp.status, 200, mp.text);
  assert.deepEqual(mp.json().status, { submitter: want, sha: 'abc1234', branch: 'main' });
  const jp = await call(`${CRS}/forged/status`, { method: 'PATCH', cert: admin, contentType: 'application/json-patch+json',
    body: [{ op: 'replace', path: '/status/submitter/username', value: 'mallory' }] });
  assert.equal(jp.status, 200, jp.text);
  assert.equal(jp.json().status.submitter.username, 'alice');
  const rm = await call(`${CRS}/forged/status`, { method: 'PATCH', cert: admin, contentType: 'application/json-patch+json',
    body: [{ op: 'remove', path: '/status/submitter' }] });
  assert.equal(rm.status, 200, rm.text);
  assert.deepEqual(rm.json().status.submitter, want);

  // The main resource ignores status altogether.
  const cur3 = (await call(`${CRS}/forged`, { cert: admin })).json();
  const main = await call(`${CRS}/forged`, { method: 'PUT', cert: admin, body: { ...cur3, status: { submitter: FORGED } } });
  assert.equal(main.status, 200, main.text);
  assert.deepEqual(main.json().status.submitter, want);
  const mainPatch = await call(`${CRS}/forged`, { method: 'PATCH', cert: admin, contentType: 'application/merge-patch+json',
    body: { status: { submitter: { username: 'mallory' } } } });
  assert.equal(mainPatch.status, 200, mainPatch.text);
  assert.deepEqual(mainPatch.json().status.submitter, want);

  const final = await call(`${CRS}/forged`, { cert: alice });
  assert.deepEqual(final.json().status, { submitter: want, sha: 'abc1234', branch: 'main' });

  // alice may create commitrequests but not write their status.
  const denied = await call(`${CRS}/forged/status`, { method: 'PATCH', cert: alice, contentType: 'application/merge-patch+json', body: { status: { sha: 'x' } } });
  assert.equal(denied.status, 403);
  assert.equal(denied.json().message, 'commitrequests.configbutler.ai "forged" is forbidden: User "alice" cannot patch resource "commitrequests/status" in API group "configbutler.ai" in the namespace "team-a"');
});

test('dryRun=All create with spec.author still requires assert-author', async () => {
  const r = await call(`${CRS}?dryRun=All`, { method: 'POST', cert: bob, body: commitRequest('dry-bob', 'tenants', AUTHOR) });
  assert.equal(r.status, 403, r.text);
  const s = r.json();
  assert.equal(s.reason, 'Forbidden');
  assert.equal(s.message, 'gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + `setting spec.author on a CommitRequest for GitTarget "tenants" requires a Role rule ${ASSERT_AUTHOR_RULE('tenants')}`);
  assert.deepEqual(s.details, { name: 'tenants', group: 'configbutler.ai', kind: 'gittargets' });

  const ok = await call(`${CRS}?dryRun=All`, { method: 'POST', cert: alice, body: commitRequest('dry-alice', 'tenants', AUTHOR) });
  assert.equal(ok.status, 201, ok.text);
  assert.equal(ok.json().status.submitter.username, 'alice');
  assert.equal((await call(`${CRS}/dry-alice`, { cert: alice })).status, 404, 'dryRun stores nothing');

  const bobPlain = await call(`${CRS}?dryRun=All`, { method: 'POST', cert: bob, body: commitRequest('dry-bob-plain', 'tenants') });
  assert.equal(bobPlain.status, 201, bobPlain.text);
});

test('anonymous: 401 on resources and discovery, 200 on /healthz', async () => {
  for (const path of [CRS, `${CRS}/forged`, '/apis', '/openapi/v2']) {
    const r = await call(path);
    assert.equal(r.status, 401, `${path}: ${r.text}`);
    assert.deepEqual(r.json(), { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
  }
  const post = await call(CRS, { method: 'POST', body: commitRequest('anon', 'tenants') });
  assert.equal(post.status, 401);
  for (const path of ['/healthz', '/livez', '/readyz']) {
    const h = await call(path);
    assert.equal(h.status, 200, `${path}: ${h.text}`);
    assert.equal(h.text, 'ok');
  }
  const v = await call('/version');
  assert.equal(v.status, 200, v.text);
});
