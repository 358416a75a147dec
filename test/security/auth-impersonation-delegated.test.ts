// Impersonation in Delegated mode: each impersonated attribute is one SubjectAccessReview with
// verb impersonate, sent to the hosting cluster (or to the addressed kcp workspace) before the
// request's own review, which is then the impersonated user's.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { X509Certificate, createHash } from 'node:crypto';
import { startFakeHostingCluster, type FakeHostingCluster, type SARSpec } from '../support/fake-hosting-cluster.js';
import { GROUP_PATH, request, startServer, type ServerProcess } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const GTS = `${GROUP_PATH}/namespaces/team-a/gittargets`;
let fake: FakeHostingCluster;
let srv: ServerProcess;
let ivan: KeyPair;

before(async () => {
  fake = await startFakeHostingCluster();
  fake.setNamespace('team-a', 'Active'); // the hosting cluster's namespace of the objects created below (NamespaceLifecycle)
  ctx.after(() => fake.close());
  const clientCA = makeCA('hosting-client-ca');
  fake.setConfigMap({ 'client-ca-file': clientCA.certPem });
  ivan = issueClientCert(clientCA, 'ivan', ['impersonators']);
  // ivan may impersonate alice, the group devs and scopes=view; alice may list GitTargets.
  fake.onSAR = (spec) => {
    const ra = spec.resourceAttributes ?? {};
    if (ra.verb === 'impersonate') {
      const ok = spec.user === 'ivan' && ((ra.resource === 'users' && ra.name === 'alice') || (ra.resource === 'groups' && ra.name === 'devs')
        || (ra.resource === 'userextras' && ra.subresource === 'scopes' && ra.name === 'view'));
      return ok ? { allowed: true } : { allowed: false, reason: 'no impersonation grant' };
    }
    return { allowed: spec.user === 'alice' };
  };
  srv = await startServer(ctx, makeCA('e2e-serving-ca'), ['--authorization-mode=Delegated', '--kubeconfig', fake.kubeconfigPath]);
});

const reviews = (from: number) => fake.sars().slice(from).map((c) => ({ path: c.path, spec: (c.body as { spec: SARSpec }).spec }));

test('each impersonated attribute is reviewed with verb impersonate; then the request is alice\'s', async () => {
  const from = fake.sars().length;
  const r = await request(srv.url, srv.caPem, GTS, {
    cert: ivan, headers: [['Impersonate-User', 'alice'], ['Impersonate-Group', 'devs'], ['Impersonate-Extra-Scopes', 'view']],
  });
  assert.equal(r.status, 200, r.text);
  // ivan's certificate's credential id travels with him, as kube-apiserver sends it (x509 CredentialIDKey).
  const id = `X509SHA256=${createHash('sha256').update(new X509Certificate(ivan.certPem).raw).digest('hex')}`;
  const ivanUser = { user: 'ivan', groups: ['impersonators', 'system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': [id] } };
  assert.deepEqual(reviews(from), [
    { path: SAR_PATH, spec: { resourceAttributes: { verb: 'impersonate', version: 'v1', resource: 'users', name: 'alice' }, ...ivanUser } },
    { path: SAR_PATH, spec: { resourceAttributes: { verb: 'impersonate', version: 'v1', resource: 'groups', name: 'devs' }, ...ivanUser } },
    { path: SAR_PATH, spec: { resourceAttributes: { verb: 'impersonate', group: 'authentication.k8s.io', version: 'v1', resource: 'userextras', subresource: 'scopes', name: 'view' }, ...ivanUser } },
    { path: SAR_PATH, spec: { resourceAttributes: { namespace: 'team-a', verb: 'list', group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets' },
      user: 'alice', groups: ['devs', 'system:authenticated'], extra: { scopes: ['view'] } } },
  ]);
});

test('a denied impersonation answers 403 with the hosting cluster\'s reason; a workspace request is reviewed there', async () => {
  const from = fake.sars().length;
  const r = await request(srv.url, srv.caPem, `/clusters/ws1${GTS}`, { cert: ivan, headers: [['Impersonate-User', 'bob']] });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json().message, 'users "bob" is forbidden: User "ivan" cannot impersonate resource "users" in API group "" at the cluster scope: no impersonation grant');
  assert.deepEqual(reviews(from).map((x) => x.path), [`/clusters/ws1${SAR_PATH}`]);
});
