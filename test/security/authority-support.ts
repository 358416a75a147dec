// One `serve --sandbox` under --authorization-mode=RBAC with client-certificate tenants, for the
// "a GitTarget carries its author's authority" tests: the sandbox is both the API the tenants
// write GitTargets to and the default source the mirror reads (as the dev admin, system:masters),
// so a tenant's 403 on the source and the GitTarget check answer from the same policy file.
import { writeFileSync, renameSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import { startServer, type StartedServer } from '../support/server.js';
import { request, type HttpResult } from '../auth-e2e/harness.js';
import { issueClientCert, type CA, type KeyPair } from '../support/pki.js';

export const GT_PATH = (ns: string) => `/apis/configbutler.ai/v1alpha1/namespaces/${ns}/gittargets`;

/** RBAC objects: a Role-like ClusterRole bound in namespaces, as a platform grants `edit`. */
export function tenantPolicy(bindings: Array<{ user: string; namespace: string; role: 'tenant-edit' | 'gittarget-only' }>): string {
  const docs = [
    `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tenant-edit}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]}
- {apiGroups: ["configbutler.ai"], resources: ["gittargets", "gittargets/status", "commitrequests"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]}`,
    `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gittarget-only}
rules:
- {apiGroups: ["configbutler.ai"], resources: ["gittargets", "gittargets/status"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]}`,
    ...bindings.map(
      (b, i) => `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b${i}, namespace: ${b.namespace}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${b.role}}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ${b.user}}`,
    ),
  ];
  return docs.join('\n---\n') + '\n';
}

export interface Tenant {
  name: string;
  cert: KeyPair;
  req(method: string, path: string, body?: unknown, contentType?: string): Promise<HttpResult>;
}

export interface AuthorityServer {
  server: StartedServer;
  /** Replaces the policy file atomically (the server re-reads it within a second). */
  setPolicy(yaml: string): void;
  tenant(name: string, groups?: string[]): Tenant;
  /** The dev admin (system:masters): seeds the sandbox. */
  admin(method: string, path: string, body?: unknown): Promise<HttpResult>;
}

export async function startAuthorityServer(dir: string, policy: string, flags: string[] = []): Promise<AuthorityServer> {
  const policyFile = join(dir, 'policy.yaml');
  const setPolicy = (yaml: string) => {
    writeFileSync(`${policyFile}.tmp`, yaml);
    renameSync(`${policyFile}.tmp`, policyFile);
  };
  setPolicy(policy);
  const server = await startServer(['--sandbox', '--authorization-mode=RBAC', `--authorization-policy-file=${policyFile}`, ...flags]);
  // The dev CA is the client CA in development: tenants' certificates are issued from it.
  const certs = join(server.dataDir, 'certs');
  const caPem = readFileSync(join(certs, 'ca.crt'), 'utf8');
  const caKeyPem = readFileSync(join(certs, 'ca.key'), 'utf8');
  const ca: CA = { cert: forge.pki.certificateFromPem(caPem), key: forge.pki.privateKeyFromPem(caKeyPem), certPem: caPem, keyPem: caKeyPem } as CA;
  const adminCert: KeyPair = { certPem: server.cert, keyPem: server.key };
  const send = (cert: KeyPair) => (method: string, path: string, body?: unknown, contentType?: string) =>
    request(server.url, caPem, path, { method, cert, body, contentType });
  return {
    server,
    setPolicy,
    tenant(name, groups = []) {
      const cert = issueClientCert(ca, name, groups);
      return { name, cert, req: send(cert) };
    },
    admin: send(adminCert),
  };
}

export function gitTargetBody(name: string, namespace: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace }, spec: { branch: 'main', path: 'live', ...spec }, ...extra };
}

/** The Status body of a refusal: reason, code and message (what kubectl prints after "Error from server (Forbidden): "). */
export function statusOf(r: HttpResult): { code: number; reason: string; message: string } {
  const b = r.json();
  return { code: b.code, reason: b.reason, message: b.message };
}
