// Front-proxy authentication through the running server (RBAC mode, --requestheader-* flags):
// X-Remote-* headers are believed only over a certificate from the requestheader CA with an
// allowed CN; over a client-CA certificate they are ignored; a disallowed CN gets 401.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type CA, type KeyPair } from '../support/pki.js';
import { ASSERT_AUTHOR_RULE, GROUP_PATH, REPO_ROOT, commitRequest, gitTarget, kubectlFor, request, responseStatus, startServer, tempDir,
  type RequestOptions, type ServerProcess } from './harness.js';
import { startFrontProxy, type ProxiedIdentity } from './front-proxy.js';

const POLICY = join(REPO_ROOT, 'test/auth/fixtures/rbac-policy.yaml');
const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let dir: string;
let srv: ServerProcess;
let clientCA: CA;
let proxyCert: KeyPair;
let rogueProxyCert: KeyPair;
const CRS = `${GROUP_PATH}/namespaces/team-a/commitrequests`;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);
const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
const EMAIL_CLAIM = 'configbutler.ai/claims/email';
const ALICE: ProxiedIdentity = { user: 'alice', groups: ['team-a-editors', 'ops'],
  extra: { [EMAIL_CLAIM]: ['alice@example.com'], 'scopes/a': ['x'] } };
/** The same identity as raw headers, as a client would try to send them itself. */
const ALICE_HEADERS: Array<[string, string]> = [['X-Remote-User', 'alice'], ['X-Remote-Group', 'team-a-editors'], ['X-Remote-Group', 'system:masters'],
  ['X-Remote-Extra-Configbutler.ai%2Fclaims%2Femail', 'alice@example.com']];

before(async () => {
  dir = tempDir(ctx, 'auth-e2e-frontproxy-');
  const serverCA = makeCA('e2e-serving-ca');
  clientCA = makeCA('e2e-client-ca');
  const rhCA = makeCA('e2e-front-proxy-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'front-proxy-ca.crt'), rhCA.certPem);
  srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'),
    '--requestheader-client-ca-file', join(dir, 'front-proxy-ca.crt'), '--requestheader-allowed-names', 'front-proxy-client',
    '--authorization-mode=RBAC', '--authorization-policy-file', POLICY]);
  proxyCert = issueClientCert(rhCA, 'front-proxy-client');
  rogueProxyCert = issueClientCert(rhCA, 'rogue-proxy');
  const admin = issueClientCert(clientCA, 'e2e-admin');
  const r = await call(`${GROUP_PATH}/namespaces/team-a/gittargets`, { method: 'POST', cert: admin, body: gitTarget('tenants') });
  assert.equal(r.status, 201, r.text);
});

async function proxy(id: ProxiedIdentity, cert = proxyCert) {
  const p = await startFrontProxy(srv.url, srv.caPem, cert, id);
  ctx.after(() => p.close());
  return p;
}

test('a front proxy with a requestheader-CA certificate is believed (kubectl through it)', async () => {
  const p = await proxy(ALICE);
  const kubectl = kubectlFor(dir, 'via-proxy-alice', p.url, undefined);
  const r = await kubectl(['create', '-f', '-', '-o', 'json', '-v=6'], JSON.stringify(commitRequest('proxied', 'tenants', AUTHOR)));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(responseStatus(r.stderr, 'POST', '/namespaces/team-a/commitrequests'), '201 Created');
  // Groups stay one per header line; of the extras only the two commit-author claims are recorded.
  assert.deepEqual(JSON.parse(r.stdout).status.submitter, {
    username: 'alice', groups: ['team-a-editors', 'ops', 'system:authenticated'], extra: { [EMAIL_CLAIM]: ['alice@example.com'] },
  });

  const carol = kubectlFor(dir, 'via-proxy-carol', (await proxy({ user: 'carol', groups: ['qa'] })).url, undefined);
  const g = await carol(['get', 'commitrequests']);
  assert.equal(g.code, 1);
  assert.match(g.stderr, /Error from server \(Forbidden\): commitrequests\.configbutler\.ai is forbidden: User "carol" cannot list resource "commitrequests" in API group "configbutler\.ai" in the namespace "team-a"/);
});

test('the same headers over a client-CA certificate are ignored', async () => {
  const bob = issueClientCert(clientCA, 'bob');
  const r = await call(CRS, { method: 'POST', cert: bob, headers: ALICE_HEADERS, body: commitRequest('bob-not-alice', 'tenants') });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json().status.submitter, { username: 'bob', groups: ['system:authenticated'] });

  // alice's privilege (assert-author on tenants) does not come with her headers.
  const a = await call(CRS, { method: 'POST', cert: bob, headers: ALICE_HEADERS, body: commitRequest('bob-authored', 'tenants', AUTHOR) });
  assert.equal(a.status, 403, a.text);
  assert.match(a.json().message, /^gittargets\.configbutler\.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets"/);
  assert.ok(a.json().message.endsWith(ASSERT_AUTHOR_RULE('tenants')));

  // Nor does system:masters: carol (no binding) stays carol.
  const carol = issueClientCert(clientCA, 'carol');
  const c = await call(CRS, { cert: carol, headers: [['X-Remote-User', 'e2e-admin'], ['X-Remote-Group', 'system:masters']] });
  assert.equal(c.status, 403, c.text);
  assert.equal(c.json().message, 'commitrequests.configbutler.ai is forbidden: User "carol" cannot list resource "commitrequests" in API group "configbutler.ai" in the namespace "team-a"');
});

test('a requestheader-CA certificate whose CN is not allowed: 401', async () => {
  const unauthorized = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 };
  const r = await call(CRS, { cert: rogueProxyCert, headers: ALICE_HEADERS });
  assert.equal(r.status, 401, r.text);
  assert.deepEqual(r.json(), unauthorized);

  const kubectl = kubectlFor(dir, 'via-rogue-proxy', (await proxy(ALICE, rogueProxyCert)).url, undefined);
  const k = await kubectl(['get', 'commitrequests']);
  assert.equal(k.code, 1);
  assert.match(k.stderr, /error: You must be logged in to the server \(the server has asked for the client to provide credentials\)\n$/);

  // A certificate signed by neither CA is a rejected credential too.
  const stranger = issueClientCert(makeCA('unknown-ca'), 'front-proxy-client');
  const s = await call(CRS, { cert: stranger, headers: ALICE_HEADERS });
  assert.equal(s.status, 401, s.text);
});

test('front-proxy headers without any client certificate are anonymous: 401', async () => {
  const r = await call(CRS, { headers: ALICE_HEADERS });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.json().reason, 'Unauthorized');
  // The proxy's certificate without a user header is not a user either.
  const n = await call(CRS, { cert: proxyCert });
  assert.equal(n.status, 401, n.text);
});
