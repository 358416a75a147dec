// kubectl end to end under --authorization-mode=RBAC with the policy fixture: alice and bob use
// commitrequests in team-a, only alice may assert an author, and only on GitTarget "tenants".
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA } from '../support/pki.js';
import { ASSERT_AUTHOR_RULE, REPO_ROOT, commitRequest, gitTarget, kubectlFor, responseStatus, startServer, tempDir, type Kubectl } from './harness.js';

const POLICY = join(REPO_ROOT, 'test/auth/fixtures/rbac-policy.yaml');
const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let admin: Kubectl;
let alice: Kubectl;
let bob: Kubectl;
let carol: Kubectl;
let dir: string;

before(async () => {
  dir = tempDir(ctx, 'auth-e2e-rbac-');
  const serverCA = makeCA('e2e-serving-ca');
  const clientCA = makeCA('e2e-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  const srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'),
    '--authorization-mode=RBAC', '--authorization-policy-file', POLICY]);
  admin = kubectlFor(dir, 'admin', srv.url, serverCA.certPem, issueClientCert(clientCA, 'e2e-admin'));
  alice = kubectlFor(dir, 'alice', srv.url, serverCA.certPem, issueClientCert(clientCA, 'alice'));
  bob = kubectlFor(dir, 'bob', srv.url, serverCA.certPem, issueClientCert(clientCA, 'bob'));
  carol = kubectlFor(dir, 'carol', srv.url, serverCA.certPem, issueClientCert(clientCA, 'carol'));
  const r = await admin(['create', '-f', '-', '-o', 'name'], [gitTarget('tenants'), gitTarget('other')].map((o) => JSON.stringify(o)).join('\n'));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'gittarget.configbutler.ai/tenants\ngittarget.configbutler.ai/other\n');
});

const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };

async function create(k: Kubectl, obj: unknown) {
  const r = await k(['create', '-f', '-', '-o', 'json', '-v=6'], JSON.stringify(obj));
  return { ...r, status: responseStatus(r.stderr, 'POST', '/namespaces/team-a/commitrequests') };
}

test('alice asserts an author on tenants: 201, status.submitter.username is alice', async () => {
  const r = await create(alice, commitRequest('alice-authored', 'tenants', AUTHOR));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.status, '201 Created');
  const obj = JSON.parse(r.stdout);
  assert.deepEqual(obj.spec.author, AUTHOR);
  assert.deepEqual(obj.status.submitter, { username: 'alice', groups: ['system:authenticated'] });
  const got = await alice(['get', 'commitrequest', 'alice-authored', '-o', 'jsonpath={.status.submitter.username}']);
  assert.equal(got.code, 0, got.stderr);
  assert.equal(got.stdout, 'alice');
});

test('alice asserting an author on another GitTarget: 403', async () => {
  const r = await create(alice, commitRequest('alice-other', 'other', AUTHOR));
  assert.equal(r.code, 1);
  assert.equal(r.status, '403 Forbidden');
  assert.match(r.stderr, /Error from server \(Forbidden\): error when creating "STDIN": gittargets\.configbutler\.ai "other" is forbidden: User "alice" cannot assert-author resource "gittargets" in API group "configbutler\.ai" in the namespace "team-a"/);
  assert.ok(r.stderr.includes(ASSERT_AUTHOR_RULE('other')), r.stderr);
  // Nothing was stored. (kubectl then looks up the namespace, which this server does not serve.)
  const got = await alice(['get', 'commitrequest', 'alice-other', '-v=6']);
  assert.equal(got.code, 1);
  assert.equal(responseStatus(got.stderr, 'GET', '/namespaces/team-a/commitrequests/alice-other'), '404 Not Found');
});

test('bob asserting an author: 403 naming the rule that would grant it', async () => {
  const r = await create(bob, commitRequest('bob-authored', 'tenants', AUTHOR));
  assert.equal(r.code, 1);
  assert.equal(r.status, '403 Forbidden');
  const expected = 'Error from server (Forbidden): error when creating "STDIN": gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + 'setting spec.author on a CommitRequest for GitTarget "tenants" requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]';
  assert.ok(r.stderr.includes(expected), r.stderr);
});

test('bob without spec.author: 201, submitter bob', async () => {
  const r = await create(bob, commitRequest('bob-plain', 'tenants'));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.status, '201 Created');
  const obj = JSON.parse(r.stdout);
  assert.equal(obj.spec.author, undefined);
  assert.deepEqual(obj.status.submitter, { username: 'bob', groups: ['system:authenticated'] });
  const cols = await bob(['get', 'commitrequests', '-o', 'custom-columns=NAME:.metadata.name,SUBMITTER:.status.submitter.username', '--no-headers', '--sort-by=.metadata.name']);
  assert.equal(cols.code, 0, cols.stderr);
  assert.deepEqual(cols.stdout.trim().split('\n').map((l) => l.split(/\s+/)), [['alice-authored', 'alice'], ['bob-plain', 'bob']]);
});

test('kubectl get as a user with no binding: 403', async () => {
  const r = await carol(['get', 'commitrequests', '-v=6']);
  assert.equal(r.code, 1);
  assert.equal(responseStatus(r.stderr, 'GET', '/namespaces/team-a/commitrequests'), '403 Forbidden');
  assert.match(r.stderr, /Error from server \(Forbidden\): commitrequests\.configbutler\.ai is forbidden: User "carol" cannot list resource "commitrequests" in API group "configbutler\.ai" in the namespace "team-a"\n/);
  const g = await carol(['get', 'gittarget', 'tenants']);
  assert.equal(g.code, 1);
  assert.match(g.stderr, /Error from server \(Forbidden\): gittargets\.configbutler\.ai "tenants" is forbidden: User "carol" cannot get resource "gittargets" in API group "configbutler\.ai" in the namespace "team-a"/);
});
