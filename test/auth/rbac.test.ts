// Table test of the RBAC evaluator against Kubernetes' semantics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePolicy } from '../../src/auth/rbac-file.js';
import type { Attributes, UserInfo } from '../../src/auth/types.js';

const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: creq-user}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["commitrequests"]
  verbs: ["get", "list", "watch", "create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: creq-users, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: creq-user}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenants-author, namespace: team-a}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["gittargets"]
  resourceNames: ["tenants"]
  verbs: ["assert-author"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-tenants-author, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenants-author}
subjects: [{kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: status-writer}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["*/status"]
  verbs: ["update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: controllers-status}
roleRef: {kind: ClusterRole, name: status-writer}
subjects: [{kind: ServiceAccount, name: controller, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules:
- nonResourceURLs: ["/metrics*"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: monitoring}
roleRef: {kind: ClusterRole, name: metrics-reader}
subjects: [{kind: Group, name: monitoring}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gt-reader}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["gittargets"]
  resourceNames: ["shared"]
  verbs: ["get", "list"]
- apiGroups: ["*"]
  resources: ["gittargets/status"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: everyone-reads-shared}
roleRef: {kind: ClusterRole, name: gt-reader}
subjects: [{kind: Group, name: "system:authenticated"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sa-local, namespace: team-b}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["gittargets"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sa-local, namespace: team-b}
roleRef: {kind: Role, name: sa-local}
subjects: [{kind: ServiceAccount, name: builder}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: admin-all}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
- nonResourceURLs: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: admins}
roleRef: {kind: ClusterRole, name: admin-all}
subjects: [{kind: Group, name: admins}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dangling, namespace: team-c}
roleRef: {kind: ClusterRole, name: does-not-exist}
subjects: [{kind: User, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregate-viewer}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {"configbutler.ai/aggregate-to-view": "true"}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view-gt, labels: {"configbutler.ai/aggregate-to-view": "true"}}
rules:
- apiGroups: ["configbutler.ai"]
  resources: ["gittargets"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-view, namespace: team-d}
roleRef: {kind: ClusterRole, name: aggregate-viewer}
subjects: [{kind: User, name: dave}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: core-cm}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: erin-core}
roleRef: {kind: ClusterRole, name: core-cm}
subjects: [{kind: User, name: erin}]
`;

const policy = parsePolicy(POLICY, 'table');
const u = (username: string, ...groups: string[]): UserInfo => ({ username, groups: [...groups, 'system:authenticated'] });
const res = (user: UserInfo, verb: string, resource: string, ns?: string, name?: string, subresource?: string, apiGroup = 'configbutler.ai'): Attributes =>
  ({ user, verb, resourceRequest: true, apiGroup, apiVersion: 'v1alpha1', resource, namespace: ns, name, subresource });
const url = (user: UserInfo, verb: string, path: string): Attributes => ({ user, verb, resourceRequest: false, path });

const alice = u('alice');
const bob = u('bob');
const nobody = u('nobody');
const controller = u('system:serviceaccount:ops:controller', 'system:serviceaccounts');
const builderB = u('system:serviceaccount:team-b:builder');
const builderA = u('system:serviceaccount:team-a:builder');
const mon = u('prom', 'monitoring');
const admin = u('root', 'admins');
const anon: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

const cases: Array<[string, Attributes, boolean]> = [
  ['alice lists commitrequests in team-a', res(alice, 'list', 'commitrequests', 'team-a'), true],
  ['alice creates a commitrequest in team-a', res(alice, 'create', 'commitrequests', 'team-a'), true],
  ['alice watches commitrequests in team-a', res(alice, 'watch', 'commitrequests', 'team-a'), true],
  ['alice cannot delete a commitrequest', res(alice, 'delete', 'commitrequests', 'team-a', 'c1'), false],
  ['ClusterRole via RoleBinding: not in another namespace', res(alice, 'list', 'commitrequests', 'team-b'), false],
  ['ClusterRole via RoleBinding: not cluster-wide', res(alice, 'list', 'commitrequests'), false],
  ['bob lists commitrequests in team-a', res(bob, 'list', 'commitrequests', 'team-a'), true],
  ['wrong API group', res(alice, 'list', 'commitrequests', 'team-a', undefined, undefined, 'other.io'), false],
  ['subresource not granted by the plain resource', res(alice, 'get', 'commitrequests', 'team-a', 'c1', 'status'), false],
  ['alice assert-author on tenants', res(alice, 'assert-author', 'gittargets', 'team-a', 'tenants'), true],
  ['alice assert-author on other', res(alice, 'assert-author', 'gittargets', 'team-a', 'other'), false],
  ['alice assert-author on tenants in another namespace', res(alice, 'assert-author', 'gittargets', 'team-b', 'tenants'), false],
  ['bob assert-author on tenants', res(bob, 'assert-author', 'gittargets', 'team-a', 'tenants'), false],
  ['assert-author without a name never matches resourceNames', res(alice, 'assert-author', 'gittargets', 'team-a'), false],
  ['resourceNames with list (no name) is denied', res(nobody, 'list', 'gittargets', 'team-a'), false],
  ['resourceNames with get of the named object', res(nobody, 'get', 'gittargets', 'team-a', 'shared'), true],
  ['resourceNames with list narrowed to the name (fieldSelector)', res(nobody, 'list', 'gittargets', 'team-a', 'shared'), true],
  ['resourceNames with get of another object', res(nobody, 'get', 'gittargets', 'team-a', 'private'), false],
  ['resourceNames do not grant watch', res(nobody, 'watch', 'gittargets', 'team-a', 'shared'), false],
  ['system:authenticated group binding does not cover anonymous', res(anon, 'get', 'gittargets', 'team-a', 'shared'), false],
  ['apiGroups * with explicit subresource', res(nobody, 'get', 'gittargets', 'team-a', 'x', 'status', 'any.group'), true],
  ['explicit gittargets/status does not grant the main resource', res(nobody, 'get', 'gittargets', 'team-a', 'x', undefined, 'any.group'), false],
  ['*/status: SA patches gittargets/status anywhere', res(controller, 'patch', 'gittargets', 'team-z', 'x', 'status'), true],
  ['*/status: SA updates commitrequests/status', res(controller, 'update', 'commitrequests', 'team-a', 'c', 'status'), true],
  ['*/status does not grant the main resource', res(controller, 'patch', 'gittargets', 'team-z', 'x'), false],
  ['*/status does not grant another subresource', res(controller, 'patch', 'gittargets', 'team-z', 'x', 'scale'), false],
  ['*/status does not grant get', res(controller, 'get', 'commitrequests', 'team-z', 'x', 'status'), false],
  ['ServiceAccount subject with namespace must match', res(u('system:serviceaccount:other:controller'), 'patch', 'gittargets', 'x', 'y', 'status'), false],
  ['SA subject without namespace defaults to the RoleBinding namespace', res(builderB, 'delete', 'gittargets', 'team-b', 'x'), true],
  ['same SA name in another namespace does not match', res(builderA, 'delete', 'gittargets', 'team-b', 'x'), false],
  ['Role verbs * covers custom verbs', res(builderB, 'assert-author', 'gittargets', 'team-b', 'x'), true],
  ['Role in team-b does not apply in team-a', res(builderB, 'get', 'gittargets', 'team-a', 'x'), false],
  ['nonResourceURL /metrics* matches /metrics', url(mon, 'get', '/metrics'), true],
  ['nonResourceURL /metrics* matches /metrics/slis', url(mon, 'get', '/metrics/slis'), true],
  ['nonResourceURL /metrics* matches /metricsfoo (plain prefix)', url(mon, 'get', '/metricsfoo'), true],
  ['nonResourceURL /metrics* does not match /healthz', url(mon, 'get', '/healthz'), false],
  ['nonResourceURL verb must match', url(mon, 'post', '/metrics'), false],
  ['non-resource URLs are not resources', res(mon, 'get', 'metrics', 'team-a'), false],
  ['user without binding cannot get /metrics', url(nobody, 'get', '/metrics'), false],
  ['admins * on anything', res(admin, 'deletecollection', 'gittargets', 'team-q'), true],
  ['admins * on cluster scope', res(admin, 'list', 'gittargets'), true],
  ['admins nonResourceURLs *', url(admin, 'get', '/anything/at/all'), true],
  ['dangling roleRef grants nothing', res(u('carol'), 'get', 'gittargets', 'team-c', 'x'), false],
  ['aggregated ClusterRole picks up labelled rules', res(u('dave'), 'get', 'gittargets', 'team-d', 'x'), true],
  ['aggregated ClusterRole via RoleBinding only in its namespace', res(u('dave'), 'get', 'gittargets', 'team-e', 'x'), false],
  ['core group "" matches configmaps', res(u('erin'), 'get', 'configmaps', 'any', 'x', undefined, ''), true],
  ['core group does not match a named group', res(u('erin'), 'get', 'configmaps', 'any', 'x', undefined, 'apps'), false],
  ['user name is case-sensitive', res(u('Alice'), 'list', 'commitrequests', 'team-a'), false],
  ['group named like a user does not match a User subject', res(u('x', 'alice'), 'list', 'commitrequests', 'team-a'), false],
];

test('RBAC evaluator table', () => {
  assert.ok(cases.length >= 40, `only ${cases.length} cases`);
  for (const [name, attrs, want] of cases) {
    const got = policy.evaluate(attrs);
    assert.equal(got.decision, want ? 'allow' : 'noopinion', name);
  }
});

test('allow reason names the binding; a dangling binding is reported', () => {
  assert.equal(policy.evaluate(res(alice, 'assert-author', 'gittargets', 'team-a', 'tenants')).reason,
    'RBAC: allowed by RoleBinding "alice-tenants-author" in namespace "team-a" of Role "tenants-author"');
  assert.equal(policy.evaluate(res(u('carol'), 'get', 'gittargets', 'team-c', 'x')).reason,
    'RBAC: clusterrole.rbac.authorization.k8s.io "does-not-exist" not found');
});

test('policy parsing rejects malformed objects with a clear message', () => {
  assert.throws(() => parsePolicy('kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: x}\n', 'f'), /Role "x" needs metadata.namespace/);
  assert.throws(() => parsePolicy('kind: Pod\napiVersion: v1\nmetadata: {name: x}\n', 'f'), /kind "Pod"/);
  assert.throws(() => parsePolicy('kind: ClusterRoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: x}\nroleRef: {kind: Role, name: r}\n', 'f'), /can only refer to a ClusterRole/);
  assert.throws(() => parsePolicy('kind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: x}\nrules: [{resources: [a]}]\n', 'f'), /verbs must be/);
  assert.throws(() => parsePolicy('a: [\n', 'f'), /document 1/);
  const list = parsePolicy('apiVersion: v1\nkind: List\nitems:\n- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}, rules: [{nonResourceURLs: ["/x"], verbs: [get]}]}\n- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: b}, roleRef: {kind: ClusterRole, name: r}, subjects: [{kind: User, name: z}]}\n', 'f');
  assert.equal(list.evaluate(url(u('z'), 'get', '/x')).decision, 'allow');
});
