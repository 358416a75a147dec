// kube-apiserver's bootstrap discovery roles (plugin/pkg/auth/authorizer/rbac/bootstrappolicy),
// built into RBAC mode so that a user granted only resource verbs can still use kubectl (discovery,
// OpenAPI for client-side validation, /version). `--rbac-bootstrap-roles=false` leaves them out.
// They apply in every logical cluster, never to the wildcard (/clusters/*).
import type { RBACObject } from './rbac.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const AUTHENTICATED = 'system:authenticated';
const UNAUTHENTICATED = 'system:unauthenticated';

/** Paths system:public-info-viewer grants, also to unauthenticated clients. */
export const PUBLIC_INFO_PATHS = ['/healthz', '/livez', '/readyz', '/version', '/version/'];

const DISCOVERY_PATHS = ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'];

function clusterRole(name: string, rules: RBACObject['rules']): RBACObject {
  return { kind: 'ClusterRole', metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } }, rules };
}

function binding(name: string, groups: string[]): RBACObject {
  return {
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name },
    subjects: groups.map((g) => ({ apiGroup: RBAC_GROUP, kind: 'Group', name: g })),
  };
}

export const BOOTSTRAP_POLICY: readonly RBACObject[] = Object.freeze([
  clusterRole('system:discovery', [{ verbs: ['get'], nonResourceURLs: DISCOVERY_PATHS }]),
  binding('system:discovery', [AUTHENTICATED]),
  clusterRole('system:basic-user', [
    { verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] },
    { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
  ]),
  binding('system:basic-user', [AUTHENTICATED]),
  clusterRole('system:public-info-viewer', [{ verbs: ['get'], nonResourceURLs: PUBLIC_INFO_PATHS }]),
  binding('system:public-info-viewer', [AUTHENTICATED, UNAUTHENTICATED]),
]);
