// `kubectl --as alice` ran as the real user, and a CommitRequest created that
// way recorded the real user as submitter. Impersonation now works as in k8s.io/apiserver: each
// impersonated attribute is authorized (verb impersonate), then the request, its authorization,
// assert-author and status.submitter are the impersonated user's.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { assertStatus } from '../support/server.js';
import { GROUP_PATH, commitRequest, gitTarget, kubectlFor, request, startServer, tempDir, type HttpResult, type Kubectl } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

// ivan may impersonate alice, the group developers, the service account team-a/builder, the uid
// u-123 and the extra scopes=view. alice may create CommitRequests in team-a and assert authors on
// GitTarget tenants; developers may list GitTargets in team-a; ivan himself may only create
// CommitRequests. carol may do nothing.
const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- {apiGroups: [""], resources: [users], resourceNames: [alice], verbs: [impersonate]}
- {apiGroups: [""], resources: [groups], resourceNames: [developers], verbs: [impersonate]}
- {apiGroups: [authentication.k8s.io], resources: [uids], resourceNames: [u-123], verbs: [impersonate]}
- {apiGroups: [authentication.k8s.io], resources: [userextras/scopes], resourceNames: [view], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ivan-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ivan}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: impersonate-builder, namespace: team-a}
rules:
- {apiGroups: [""], resources: [serviceaccounts], resourceNames: [builder], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ivan-impersonates-builder, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: impersonate-builder}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ivan}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: requester, namespace: team-a}
rules:
- {apiGroups: [configbutler.ai], resources: [commitrequests], verbs: [create, get]}
- {apiGroups: [configbutler.ai], resources: [gittargets], resourceNames: [tenants], verbs: [assert-author]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: requesters, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: requester}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: ServiceAccount, name: builder}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: plain-requester, namespace: team-a}
rules:
- {apiGroups: [configbutler.ai], resources: [commitrequests], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ivan-requests, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: plain-requester}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ivan}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gittarget-reader, namespace: team-a}
rules:
- {apiGroups: [configbutler.ai], resources: [gittargets], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: developers-read, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gittarget-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: developers}]
`;

const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
let url: string;
let caPem: string;
let ivan: Kubectl;
let carol: Kubectl;
let ivanCert: KeyPair;
let carolCert: KeyPair;

before(async () => {
  const dir = tempDir(ctx, 'sec-impersonation-');
  const serverCA = makeCA('sec-serving-ca');
  const clientCA = makeCA('sec-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  const srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'), '--authorization-mode=RBAC',
    '--authorization-policy-file', join(dir, 'policy.yaml')]);
  url = srv.url;
  caPem = serverCA.certPem;
  ivanCert = issueClientCert(clientCA, 'ivan');
  carolCert = issueClientCert(clientCA, 'carol');
  ivan = kubectlFor(dir, 'ivan', url, caPem, ivanCert);
  carol = kubectlFor(dir, 'carol', url, caPem, carolCert);
  const admin = issueClientCert(clientCA, 'root', ['system:masters']);
  const r = await request(url, caPem, `${GROUP_PATH}/namespaces/team-a/gittargets`, { method: 'POST', cert: admin, body: gitTarget('tenants') });
  assert.equal(r.status, 201, r.text);
});

const asStatus = (r: HttpResult) => ({ status: r.status, text: r.text, body: JSON.parse(r.text), headers: r.headers });
const CRS = `${GROUP_PATH}/namespaces/team-a/commitrequests`;

test('kubectl --as alice: the CommitRequest is alice\'s (assert-author authorized for alice, submitter alice)', async () => {
  const r = await ivan(['--as', 'alice', 'create', '-f', '-', '-o', 'json'], JSON.stringify(commitRequest('as-alice', 'tenants', AUTHOR)));
  assert.equal(r.stderr, '');
  assert.equal(r.code, 0);
  const obj = JSON.parse(r.stdout);
  assert.deepEqual(obj.spec.author, AUTHOR);
  assert.deepEqual(obj.status.submitter, { username: 'alice', groups: ['system:authenticated'] });
  // ivan himself may not assert an author: the check above was alice's, not his.
  const own = await ivan(['create', '-f', '-'], JSON.stringify(commitRequest('as-ivan', 'tenants', AUTHOR)));
  assert.equal(own.code, 1);
  assert.match(own.stderr, /^Error from server \(Forbidden\): error when creating "STDIN": gittargets\.configbutler\.ai "tenants" is forbidden: User "ivan" cannot assert-author resource "gittargets"/);
});

test('kubectl --as a user ivan may not impersonate: 403 in kube\'s words, nothing created', async () => {
  // --validate=false: the OpenAPI download would be refused first, for the same reason.
  const r = await ivan(['--as', 'bob', 'create', '--validate=false', '-f', '-'], JSON.stringify(commitRequest('as-bob', 'tenants')));
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'Error from server (Forbidden): error when creating "STDIN": users "bob" is forbidden: User "ivan" cannot impersonate resource "users" in API group "" at the cluster scope\n');
  const direct = await request(url, caPem, CRS, { method: 'POST', cert: carolCert, headers: [['Impersonate-User', 'alice']], body: commitRequest('carol-as-alice', 'tenants') });
  assertStatus(asStatus(direct), 403, 'Forbidden', 'users "alice" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope');
  assert.deepEqual(asStatus(direct).body.details, { name: 'alice', kind: 'users' });
  // kubectl's discovery is refused the same way (it only says "Forbidden: unknown" for it).
  const c = await carol(['--as', 'alice', 'get', 'commitrequest', 'as-alice']);
  assert.equal(c.code, 1);
  assert.match(c.stderr, /Error from server \(Forbidden\): unknown\n$/);
});

test('kubectl --as alice --as-group developers: authorized as alice in developers', async () => {
  const denied = await ivan(['--as', 'alice', 'get', 'gittargets', '-n', 'team-a', '-o', 'name']);
  assert.equal(denied.stderr, 'Error from server (Forbidden): gittargets.configbutler.ai is forbidden: User "alice" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"\n');
  const r = await ivan(['--as', 'alice', '--as-group', 'developers', 'get', 'gittargets', '-n', 'team-a', '-o', 'name']);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, 'gittarget.configbutler.ai/tenants\n');
  const bad = await ivan(['--as', 'alice', '--as-group', 'system:masters', 'get', 'gittargets', '-n', 'team-a']);
  assert.equal(bad.stderr, 'Error from server (Forbidden): groups "system:masters" is forbidden: User "ivan" cannot impersonate resource "groups" in API group "" at the cluster scope\n');
});

test('a service account: authorized on serviceaccounts in its namespace, with its implied groups', async () => {
  const r = await ivan(['--as', 'system:serviceaccount:team-a:builder', 'create', '-f', '-', '-o', 'json'], JSON.stringify(commitRequest('as-builder', 'tenants')));
  assert.equal(r.stderr, '');
  assert.deepEqual(JSON.parse(r.stdout).status.submitter, {
    username: 'system:serviceaccount:team-a:builder',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:team-a', 'system:authenticated'],
  });
  const other = await ivan(['--as', 'system:serviceaccount:team-b:builder', 'create', '--validate=false', '-f', '-'], JSON.stringify(commitRequest('as-b-builder', 'tenants')));
  assert.equal(other.stderr, 'Error from server (Forbidden): error when creating "STDIN": serviceaccounts "builder" is forbidden: User "ivan" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-b"\n');
});

test('Impersonate-Uid and Impersonate-Extra-*: each value authorized; the uid reaches the submitter', async () => {
  const ok = await request(url, caPem, CRS, {
    method: 'POST', cert: ivanCert, body: commitRequest('as-alice-uid', 'tenants'),
    headers: [['Impersonate-User', 'alice'], ['Impersonate-Uid', 'u-123'], ['Impersonate-Extra-Scopes', 'view']],
  });
  assert.equal(ok.status, 201, ok.text);
  assert.deepEqual(JSON.parse(ok.text).status.submitter, { username: 'alice', uid: 'u-123', groups: ['system:authenticated'] });
  const extra = await request(url, caPem, CRS, {
    method: 'POST', cert: ivanCert, body: commitRequest('as-alice-admin', 'tenants'),
    headers: [['Impersonate-User', 'alice'], ['Impersonate-Extra-Scopes', 'view'], ['Impersonate-Extra-Scopes', 'admin']],
  });
  assertStatus(asStatus(extra), 403, 'Forbidden',
    'userextras.authentication.k8s.io "admin" is forbidden: User "ivan" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope');
  const uid = await request(url, caPem, CRS, {
    method: 'POST', cert: ivanCert, body: commitRequest('as-alice-uid2', 'tenants'), headers: [['Impersonate-User', 'alice'], ['Impersonate-Uid', 'u-999']],
  });
  assertStatus(asStatus(uid), 403, 'Forbidden',
    'uids.authentication.k8s.io "u-999" is forbidden: User "ivan" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope');
});

test('impersonating groups without a user is a bad request', async () => {
  const r = await request(url, caPem, CRS, { cert: ivanCert, headers: [['Impersonate-Group', 'developers']] });
  assertStatus(asStatus(r), 400, 'BadRequest', 'requested impersonation (Impersonate-Group) without impersonating a user: set Impersonate-User');
});
