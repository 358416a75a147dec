// In RBAC mode a user granted only resource verbs could not run
// `kubectl create -f` (client-side validation could not download OpenAPI). kube-apiserver's
// bootstrap roles system:discovery, system:basic-user and system:public-info-viewer are built in
// (the last also for unauthenticated clients); --rbac-bootstrap-roles=false leaves them out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA } from '../support/pki.js';
import { assertStatus } from '../support/server.js';
import { kubectlFor, request, startServer, tempDir, type TestContext } from '../auth-e2e/harness.js';

// erin may create and read GitTargets in team-a, and nothing else.
const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gittarget-editor, namespace: team-a}
rules:
- {apiGroups: [configbutler.ai], resources: [gittargets], verbs: [create, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: erin, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gittarget-editor}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}
`;

const MANIFEST = `apiVersion: configbutler.ai/v1alpha1
kind: GitTarget
metadata:
  name: erins
  namespace: team-a
spec:
  repository: {url: 'https://example.com/r.git'}
  branch: main
  path: tenants/e
`;

async function setup(t: TestContext, extra: string[]) {
  const dir = tempDir(t, 'sec-bootstrap-');
  const serverCA = makeCA('sec-serving-ca');
  const clientCA = makeCA('sec-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  writeFileSync(join(dir, 'gt.yaml'), MANIFEST);
  // No always-allowed paths: /version and /healthz are decided by the authorizer too.
  const srv = await startServer(t, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'), '--authorization-mode=RBAC',
    '--authorization-policy-file', join(dir, 'policy.yaml'), '--authorization-always-allow-paths=', ...extra]);
  const erinCert = issueClientCert(clientCA, 'erin');
  return { dir, srv, serverCA, erinCert, erin: kubectlFor(dir, 'erin', srv.url, serverCA.certPem, erinCert) };
}

test('bootstrap roles: a user granted only resource verbs runs kubectl create -f with empty stderr', { timeout: 90_000 }, async (t) => {
  const { dir, srv, serverCA, erinCert, erin } = await setup(t, []);
  const r = await erin(['create', '-f', join(dir, 'gt.yaml')]);
  assert.equal(r.stderr, '');
  assert.equal(r.code, 0);
  assert.equal(r.stdout, 'gittarget.configbutler.ai/erins created\n');
  // system:discovery and system:public-info-viewer for erin; public-info also without a certificate.
  for (const p of ['/api', '/apis', '/openapi/v2', '/openapi/v3', '/version', '/healthz', '/livez', '/readyz']) {
    const res = await request(srv.url, serverCA.certPem, p, { cert: erinCert });
    assert.equal(res.status, 200, `${p}: ${res.text}`);
  }
  for (const p of ['/version', '/healthz', '/livez', '/readyz']) {
    const res = await request(srv.url, serverCA.certPem, p);
    assert.equal(res.status, 200, `anonymous ${p}: ${res.text}`);
  }
  // Discovery is not public, and resource verbs beyond the grant stay denied.
  const anonApis = await request(srv.url, serverCA.certPem, '/apis');
  assert.equal(anonApis.status, 401, anonApis.text);
  const list = await request(srv.url, serverCA.certPem, '/apis/configbutler.ai/v1alpha1/namespaces/team-a/gittargets', { cert: erinCert });
  const body = { status: list.status, text: list.text, body: list.json(), headers: list.headers };
  assertStatus(body, 403, 'Forbidden', 'gittargets.configbutler.ai is forbidden: User "erin" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"');
});

test('bootstrap roles: --rbac-bootstrap-roles=false leaves them out', { timeout: 90_000 }, async (t) => {
  const { dir, srv, serverCA, erinCert, erin } = await setup(t, ['--rbac-bootstrap-roles=false', '--authorization-always-allow-paths=/healthz']);
  const res = await request(srv.url, serverCA.certPem, '/apis', { cert: erinCert });
  assertStatus({ status: res.status, text: res.text, body: res.json(), headers: res.headers }, 403, 'Forbidden', 'forbidden: User "erin" cannot get path "/apis"');
  const anon = await request(srv.url, serverCA.certPem, '/version');
  assert.equal(anon.status, 401, anon.text);
  const r = await erin(['create', '-f', join(dir, 'gt.yaml')]);
  // The failure the issue reported, as kubectl prints it.
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `error: error validating "${join(dir, 'gt.yaml')}": error validating data: failed to download openapi: unknown; if you choose to ignore these errors, turn validation off with --validate=false\n`);
});
