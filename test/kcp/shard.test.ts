// Requests from a kcp shard (docs/kcp.md), RBAC mode with grants in logical
// cluster ws-a. The "shard" is a client certificate from the requestheader CA with CN kcp-shard and
// O kcp:shards, exactly what kcp's --shard-client-cert-file presents:
// - with X-Remote-User (kcp main forwards the caller) the caller is believed for /clusters/ws-a;
// - the same headers over a client-CA certificate are ignored, a disallowed CN is refused;
// - without X-Remote-User (kcp ≤ v0.32.3) the request is the shard's own: it is the submitter and
//   can never assert an author, even though the policy grants the shard assert-author;
// - the shard's wildcard discovery and list work (--wildcard-cluster-groups); a user's do not.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type CA, type KeyPair } from '../support/pki.js';
import { GROUP_PATH, commitRequest, gitTarget, request, startServer, tempDir, type RequestOptions, type ServerProcess } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const WS_A = '/clusters/ws-a';
const CRS = `${WS_A}${GROUP_PATH}/namespaces/team-a/commitrequests`;
const AUTHOR = { name: 'Jane Doe', email: 'jane@example.com' };
// alice and the shard itself may do everything with our resources in ws-a, assert-author included.
const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reverser-author, annotations: {kcp.io/cluster: ws-a}}
rules:
- {apiGroups: [configbutler.ai], resources: [gittargets, commitrequests], verbs: [get, list, watch, create]}
- {apiGroups: [configbutler.ai], resources: [gittargets], verbs: [assert-author]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reverser-authors, annotations: {kcp.io/cluster: ws-a}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reverser-author}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: kcp-shard}
`;

let srv: ServerProcess;
let clientCA: CA;
let shard: KeyPair;
let rogue: KeyPair;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);
const asAlice: Array<[string, string]> = [['X-Remote-User', 'alice'], ['X-Remote-Group', 'team-a']];

before(async () => {
  const dir = tempDir(ctx, 'kcp-shard-');
  clientCA = makeCA('kcp-client-ca');
  const rhCA = makeCA('kcp-shard-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'shard-ca.crt'), rhCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  srv = await startServer(ctx, makeCA('kcp-serving-ca'), ['--client-ca-file', join(dir, 'client-ca.crt'),
    '--requestheader-client-ca-file', join(dir, 'shard-ca.crt'), '--requestheader-allowed-names', 'kcp-shard',
    '--kcp-shard-users', 'kcp-shard', '--wildcard-cluster-groups', 'kcp:shards',
    '--authorization-mode=RBAC', '--authorization-policy-file', join(dir, 'policy.yaml')]);
  shard = issueClientCert(rhCA, 'kcp-shard', ['kcp:shards']);
  rogue = issueClientCert(rhCA, 'not-a-shard', ['kcp:shards']);
  const admin = issueClientCert(clientCA, 'admin', ['system:masters']);
  const r = await call(`${WS_A}${GROUP_PATH}/namespaces/team-a/gittargets`, { method: 'POST', cert: admin, body: gitTarget('tenants') });
  assert.equal(r.status, 201, r.text);
});

test('through the shard certificate X-Remote-User is believed for /clusters/ws-a (alice asserts an author)', async () => {
  const r = await call(CRS, { method: 'POST', cert: shard, headers: asAlice, body: commitRequest('by-alice', 'tenants', AUTHOR) });
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json().status.submitter, { username: 'alice', groups: ['team-a', 'system:authenticated'] });
  const stored = await call(`${CRS}/by-alice`, { cert: shard, headers: asAlice });
  assert.equal(stored.status, 200, stored.text);
  assert.equal((await call(`/clusters/ws-b${GROUP_PATH}/namespaces/team-a/commitrequests/by-alice`, { cert: shard, headers: asAlice })).status, 403);
});

test('the same headers over a client-CA certificate are ignored; a requestheader certificate with another CN is refused', async () => {
  const bob = issueClientCert(clientCA, 'bob');
  const r = await call(CRS, { method: 'POST', cert: bob, headers: asAlice, body: commitRequest('by-bob', 'tenants') });
  assert.equal(r.status, 403, r.text);
  assert.match(r.json().message, /^commitrequests\.configbutler\.ai is forbidden: User "bob" cannot create resource "commitrequests"/);
  const x = await call(CRS, { method: 'POST', cert: rogue, headers: asAlice, body: commitRequest('by-rogue', 'tenants') });
  assert.equal(x.status, 401, x.text);
  assert.equal(x.json().reason, 'Unauthorized');
});

test('a shard request without a forwarded caller is the shard: it is the submitter and cannot assert an author', async () => {
  const denied = await call(CRS, { method: 'POST', cert: shard, body: commitRequest('shard-author', 'tenants', AUTHOR) });
  assert.equal(denied.status, 403, denied.text);
  assert.equal(denied.json().reason, 'Forbidden');
  assert.match(denied.json().message, /User "kcp-shard" cannot assert-author resource "gittargets" in API group "configbutler\.ai" in the namespace "team-a".*the request carries only the identity of kcp shard "kcp-shard" \(--kcp-shard-users\), not its caller's/);
  const gone = await call(`${CRS}/shard-author`, { cert: shard });
  assert.equal(gone.status, 404, 'a denied CommitRequest is not stored');

  const ok = await call(CRS, { method: 'POST', cert: shard, body: commitRequest('shard-plain', 'tenants') });
  assert.equal(ok.status, 201, ok.text);
  assert.deepEqual(ok.json().status.submitter, { username: 'kcp-shard', groups: ['kcp:shards', 'system:authenticated'] });
});

test('the shard discovers and lists across /clusters/*; a user\'s wildcard request is refused', async () => {
  const d = await call(`/clusters/*${GROUP_PATH}`, { cert: shard });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.json().kind, 'APIResourceList');
  const gt = d.json().resources.find((x: any) => x.name === 'gittargets');
  assert.deepEqual(gt.verbs, ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch']);

  const l = await call(`/clusters/*${GROUP_PATH}/gittargets`, { cert: shard });
  assert.equal(l.status, 200, l.text);
  assert.deepEqual(l.json().items.map((i: any) => i.metadata.name), ['tenants']);

  for (const path of [`/clusters/*${GROUP_PATH}`, `/clusters/*${GROUP_PATH}/gittargets`]) {
    const u = await call(path, { cert: shard, headers: asAlice });
    assert.equal(u.status, 403, `${path}: ${u.text}`);
    assert.match(u.json().message, /access across all logical clusters \(\/clusters\/\*\) needs membership in system:masters or in a group named by --wildcard-cluster-groups/);
  }
});
