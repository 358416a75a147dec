// Pure functions of the mirror: sanitizing and cluster noise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sanitizeObject } from '../../src/controllers/mirror/sanitize.js';
import { isClusterNoise } from '../../src/controllers/mirror/noise.js';
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
  const out = sanitizeObject(live);
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

test('sanitizeObject copies the payload as a JSON round trip would, and never shares its objects with the input', () => {
  const data = JSON.parse('{"__proto__":"x","b":"y"}') as Record<string, unknown>;
  const spec = { nested: [{ a: [1, -0, undefined, 'z'] }, null], gone: undefined, n: -0, deep: { e: {} } };
  const live = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' }, data, spec } as unknown as KubeObject;
  const out = sanitizeObject(live);
  assert.deepEqual(out.data, JSON.parse(JSON.stringify(data)));
  assert.deepEqual(Object.keys(out.data as object), ['__proto__', 'b'], '__proto__ stays an own key');
  assert.equal(Object.getPrototypeOf(out.data), Object.prototype);
  assert.deepEqual(out.spec, JSON.parse(JSON.stringify(spec)));
  assert.ok(Object.is((out.spec as any).n, 0) && Object.is((out.spec as any).nested[0].a[1], 0), '-0 becomes 0, as JSON writes it');
  (out.spec as any).deep.e.changed = true;
  (out.spec as any).nested[0].a.push('more');
  assert.deepEqual(spec.deep.e, {}, 'the input is not changed through the copy');
  assert.equal(spec.nested[0]!.a.length, 4);
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
