// In RBAC mode the policy ignored logical clusters. alice, granted in team-a of
// the default cluster, could create under /clusters/foo/..., and a wildcard list returned team-a
// objects of every cluster. A grant now applies only in the cluster its object names (annotation
// kcp.io/cluster; the default cluster without it), and /clusters/* needs an explicit grant.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { assertStatus } from '../support/server.js';
import { GROUP_PATH, gitTarget, request, startServer, tempDir, type HttpResult } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const editor = (who: string, cluster?: string) => `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: gittarget-editor
  namespace: team-a
${cluster ? `  annotations: {kcp.io/cluster: ${cluster}}\n` : ''}rules:
- {apiGroups: [configbutler.ai], resources: [gittargets], verbs: [create, get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ${who}
  namespace: team-a
${cluster ? `  annotations: {kcp.io/cluster: ${cluster}}\n` : ''}roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gittarget-editor}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ${who}}
`;

// alice: team-a of the default cluster. bob: team-a of cluster foo. carol: everything in the
// default cluster, cluster-wide. The shard identity: group kcp-shards (--wildcard-cluster-groups).
const POLICY = [
  editor('alice'),
  editor('bob', 'foo'),
  `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: everything}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carol}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: everything}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
`,
].join('---\n');

let url: string;
let caPem: string;
const certs: Record<string, KeyPair> = {};

before(async () => {
  const dir = tempDir(ctx, 'sec-clusters-');
  const serverCA = makeCA('sec-serving-ca');
  const clientCA = makeCA('sec-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  const srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'), '--authorization-mode=RBAC',
    '--authorization-policy-file', join(dir, 'policy.yaml'), '--wildcard-cluster-groups=kcp-shards']);
  url = srv.url;
  caPem = serverCA.certPem;
  for (const u of ['alice', 'bob', 'carol']) certs[u] = issueClientCert(clientCA, u);
  certs.shard = issueClientCert(clientCA, 'shard-1', ['kcp-shards']);
  certs.admin = issueClientCert(clientCA, 'root', ['system:masters']);
});

const TEAM_A = `${GROUP_PATH}/namespaces/team-a/gittargets`;
const asStatus = (r: HttpResult) => ({ status: r.status, text: r.text, body: JSON.parse(r.text), headers: r.headers });
const create = (who: string, prefix: string, name: string) =>
  request(url, caPem, `${prefix}${TEAM_A}`, { method: 'POST', cert: certs[who], body: gitTarget(name) });
const names = (r: HttpResult) => (JSON.parse(r.text).items as Array<{ metadata: { name: string } }>).map((o) => o.metadata.name);

test('alice, granted in team-a of the default cluster, creates there but not under /clusters/foo', async () => {
  assert.equal((await create('alice', '', 'alice-default')).status, 201);
  const r = await create('alice', '/clusters/foo', 'alice-foo');
  assertStatus(asStatus(r), 403, 'Forbidden',
    'gittargets.configbutler.ai is forbidden: User "alice" cannot create resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"');
  const g = await request(url, caPem, `/clusters/foo${TEAM_A}/alice-foo`, { cert: certs.admin });
  assert.equal(g.status, 404, 'nothing was created in foo');
});

test('bob, granted in team-a of cluster foo (annotation kcp.io/cluster), creates only there', async () => {
  assert.equal((await create('bob', '/clusters/foo', 'bob-foo')).status, 201);
  const r = await create('bob', '', 'bob-default');
  assertStatus(asStatus(r), 403, 'Forbidden',
    'gittargets.configbutler.ai is forbidden: User "bob" cannot create resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"');
  assert.deepEqual(names(await request(url, caPem, `/clusters/foo${TEAM_A}`, { cert: certs.bob })), ['bob-foo']);
});

test('a wildcard list is never derived from a grant inside one cluster', async () => {
  for (const who of ['alice', 'bob', 'carol']) {
    const r = await request(url, caPem, `/clusters/*${TEAM_A}`, { cert: certs[who] });
    assertStatus(asStatus(r), 403, 'Forbidden',
      `gittargets.configbutler.ai is forbidden: User "${who}" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": ` +
        'access across all logical clusters (/clusters/*) needs membership in system:masters or in a group named by --wildcard-cluster-groups');
  }
  const all = await request(url, caPem, `/clusters/*${GROUP_PATH}/gittargets`, { cert: certs.carol });
  assert.equal(all.status, 403, all.text);
});

test('the wildcard group (--wildcard-cluster-groups) and system:masters list across clusters', async () => {
  for (const who of ['shard', 'admin']) {
    const r = await request(url, caPem, `/clusters/*${TEAM_A}`, { cert: certs[who] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(names(r).sort(), ['alice-default', 'bob-foo']);
  }
  // The wildcard group grants the wildcard only, not each cluster.
  const r = await request(url, caPem, `/clusters/foo${TEAM_A}`, { cert: certs.shard });
  assert.equal(r.status, 403, r.text);
});

test('a policy object cannot belong to the wildcard cluster', async () => {
  const { parsePolicy } = await import('../../src/auth/rbac-file.js');
  assert.throws(() => parsePolicy(editor('mallory', '"*"'), 'p.yaml'), {
    message: 'p.yaml: document 1: Role "gittarget-editor": annotation kcp.io/cluster: a grant cannot belong to the wildcard cluster "*" (use --wildcard-cluster-groups)',
  });
});
