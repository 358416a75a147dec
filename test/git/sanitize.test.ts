// Pure functions: sanitizing, cluster noise, paths, repository URLs and credentials.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalPath, credentialsFromSecret, isClusterNoise, sanitizeObject, validateRepositoryURL, validateTargetPath, normalizeTargetPath } from '../../src/git/index.js';
import type { KubeObject } from '../../src/storage/types.js';

test('sanitizeObject keeps the allowlist and strips server and tool metadata', () => {
  const live: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'web', namespace: 'shop', uid: 'u', resourceVersion: '12', generation: 3, creationTimestamp: '2024-01-01T00:00:00Z',
      managedFields: [{}], ownerReferences: [{}], finalizers: ['x'], generateName: 'w-', selfLink: '/x',
      labels: { app: 'web', 'kustomize.toolkit.fluxcd.io/name': 'f', 'applyset.kubernetes.io/part-of': 'a', 'app.kubernetes.io/instance': 'web' },
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': '{}', 'argocd.argoproj.io/tracking-id': 't', 'argocd.argoproj.io/sync-wave': '1',
        'kcp.io/cluster': 'root', 'kcp.io/other': 'keep', 'deployment.kubernetes.io/revision': '2',
      },
    },
    spec: { clusterIP: '10.0.0.1', clusterIPs: ['10.0.0.1'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster', ports: [{ port: 80 }] },
    status: { loadBalancer: {} },
    stringData: { a: 'b' },
  };
  const out = sanitizeObject(live, { includeClusterNoise: false });
  assert.deepEqual(out, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'web', namespace: 'shop',
      labels: { app: 'web', 'app.kubernetes.io/instance': 'web' },
      annotations: { 'argocd.argoproj.io/sync-wave': '1', 'kcp.io/other': 'keep' },
    },
    spec: { ports: [{ port: 80 }] },
  });
  assert.equal((live.spec as Record<string, unknown>).clusterIP, '10.0.0.1', 'input not mutated');
});

test('sanitizeObject: empty labels/annotations vanish; kind removals; extra top-level keys kept', () => {
  const pod = sanitizeObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { 'kro.run/x': 'y' }, annotations: {} }, spec: { nodeName: 'n1', serviceAccountName: 'sa' } });
  assert.deepEqual(pod, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { serviceAccountName: 'sa' } });
  const pvc = sanitizeObject({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c' }, spec: { volumeName: 'pv', volumeMode: 'Filesystem', resources: {} } });
  assert.deepEqual(pvc.spec, { resources: {} });
  const rb = sanitizeObject({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'b', namespace: 'n' }, subjects: [{ kind: 'User', name: 'a' }], roleRef: { kind: 'Role', name: 'r' } });
  assert.deepEqual(Object.keys(rb), ['apiVersion', 'kind', 'metadata', 'subjects', 'roleRef']);
  const cm = sanitizeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' }, binaryData: { b: 'AA==' }, immutable: true });
  assert.deepEqual(cm, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' }, binaryData: { b: 'AA==' } });
});

test('isClusterNoise', () => {
  const cm = (name: string, annotations?: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'a', annotations } });
  assert.equal(isClusterNoise(cm('kube-root-ca.crt'), { group: '', resource: 'configmaps' }), true);
  assert.equal(isClusterNoise(cm('app'), { group: '', resource: 'configmaps' }), false);
  assert.equal(isClusterNoise(cm('lock', { 'control-plane.alpha.kubernetes.io/leader': '{}' }), { group: '', resource: 'configmaps' }), true);
  assert.equal(isClusterNoise({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 't' }, type: 'kubernetes.io/service-account-token' }, { group: '', resource: 'secrets' }), true);
  assert.equal(isClusterNoise({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 't' }, type: 'Opaque' }, { group: '', resource: 'secrets' }), false);
  assert.equal(isClusterNoise({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'ctrl', namespace: 'x' }, spec: { holderIdentity: 'pod-1' } }, { group: 'coordination.k8s.io', resource: 'leases' }), true);
  assert.equal(isClusterNoise({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'mine', namespace: 'x' }, spec: {} }, { group: 'coordination.k8s.io', resource: 'leases' }), false);
  assert.equal(isClusterNoise({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e' } }, { group: '', resource: 'events' }), true);
  assert.equal(isClusterNoise({ apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e' } }, { group: 'events.k8s.io', resource: 'events' }), true);
});

test('canonicalPath and validateTargetPath', () => {
  assert.equal(canonicalPath({ path: 'tenants/a/', namespace: 'default', group: '', resource: 'configmaps', name: 'app' }), 'tenants/a/default/configmaps/app.yaml');
  assert.equal(canonicalPath({ path: '.', namespace: 'default', group: 'apps', resource: 'deployments', name: 'app' }), 'default/apps/deployments/app.yaml');
  assert.equal(canonicalPath({ path: '', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', name: 'admin' }), '_cluster/rbac.authorization.k8s.io/clusterroles/admin.yaml');
  for (const ok of ['.', 'tenants/a', 'tenants/a/', 'a.b/c']) assert.equal(validateTargetPath(ok), undefined, ok);
  assert.match(validateTargetPath('/abs')!, /leading/);
  assert.match(validateTargetPath('a\\b')!, /backslash/);
  assert.match(validateTargetPath('a/../b')!, /\.\./);
  assert.match(validateTargetPath('a..b')!, /\.\./);
  assert.match(validateTargetPath('a//b')!, /empty/);
  assert.equal(normalizeTargetPath('tenants/a/'), 'tenants/a');
  assert.equal(normalizeTargetPath('.'), '');
});

test('validateRepositoryURL', () => {
  for (const ok of ['https://git.example.com/org/config.git', 'http://127.0.0.1:8080/r.git', 'file:///srv/git/r.git', 'local:tenants']) {
    assert.equal(validateRepositoryURL(ok), undefined, ok);
  }
  assert.match(validateRepositoryURL('ssh://git@github.com/org/r.git')!, /SSH .*not supported/);
  assert.match(validateRepositoryURL('git@github.com:org/r.git')!, /SSH .*not supported/);
  assert.match(validateRepositoryURL('file://relative/r.git')!, /absolute/);
  assert.match(validateRepositoryURL('local:../x')!, /local:<name>/);
  assert.match(validateRepositoryURL('https://u:p@host/r.git')!, /Secret/);
  assert.match(validateRepositoryURL('ftp://host/r.git')!, /not supported/);
  assert.match(validateRepositoryURL('')!, /empty/);
});

test('credentialsFromSecret accepts plain, Flux- and Argo CD-shaped Secrets', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  assert.deepEqual(credentialsFromSecret({ data: { username: b64('bob'), password: b64('pw') } }), { username: 'bob', password: 'pw' });
  // Argo CD repository Secret: url/type/project ride along.
  assert.deepEqual(credentialsFromSecret({ stringData: { type: 'git', url: 'https://h/r.git', project: 'default', username: 'x', password: 'y' } }), { username: 'x', password: 'y' });
  assert.deepEqual(credentialsFromSecret({ data: { bearerToken: b64('tok\n') } }), { bearerToken: 'tok' });
  assert.deepEqual(credentialsFromSecret({ data: { token: b64('ghp_1') } }), { username: 'git', password: 'ghp_1' });
  assert.match(credentialsFromSecret({ data: { identity: b64('key') } }) as string, /SSH/);
  assert.match(credentialsFromSecret({}) as string, /no usable credentials/);
});
