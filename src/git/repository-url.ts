// Repository URLs and credentials. isomorphic-git speaks smart HTTP only; SSH is refused at
// validation so a GitTarget fails fast with a message instead of a transport error later.
import { join } from 'node:path';
import { validateRepositoryURL } from '../model/destination.js';

// The rule lives in the shared model (the API validates GitTargets with it); re-exported for the engine's callers.
export { validateRepositoryURL };

export type RepositoryLocation =
  | { kind: 'http'; url: string }
  | { kind: 'file'; gitdir: string }
  | { kind: 'local'; name: string };

/** Whose repository this is: a GitTarget's logical cluster and namespace. */
export interface RepositoryTenant {
  cluster: string;
  namespace: string;
}

/** The logical cluster of the default (non-kcp) view; the same value as storage's DEFAULT_CLUSTER. */
const DEFAULT_CLUSTER = '_';

/**
 * Where `local:<name>` lives for a tenant: `<data-dir>/git/<namespace>/<name>.git` in the default
 * cluster, `<data-dir>/git/_clusters/<cluster>/<namespace>/<name>.git` in a kcp logical cluster
 * (`_clusters` cannot be a namespace: namespaces have no "_"). So two namespaces, or two
 * workspaces, naming the same `local:` name never write the same repository. Without a tenant
 * (the engine used as a library, its tests) it is `<data-dir>/git/<name>.git`, the layout before
 * partitioning; docs/security.md says how to move such repositories.
 */
export function localGitdir(dataDir: string, name: string, tenant?: RepositoryTenant): string {
  if (!tenant) return join(dataDir, 'git', `${name}.git`);
  const segment = (s: string, what: string) => {
    if (!/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(s) || s.includes('..')) throw new Error(`${what} "${s}" cannot name a repository folder`);
    return s;
  };
  const ns = segment(tenant.namespace, 'namespace');
  if (tenant.cluster === DEFAULT_CLUSTER) return join(dataDir, 'git', ns, `${name}.git`);
  return join(dataDir, 'git', '_clusters', segment(tenant.cluster, 'logical cluster'), ns, `${name}.git`);
}

export function parseRepositoryURL(url: string, dataDir: string, tenant?: RepositoryTenant): RepositoryLocation & { gitdir?: string } {
  const bad = validateRepositoryURL(url);
  if (bad) throw new Error(bad);
  if (url.startsWith('local:')) {
    const name = url.slice('local:'.length);
    return { kind: 'local', name, gitdir: localGitdir(dataDir, name, tenant) };
  }
  if (url.startsWith('file://')) return { kind: 'file', gitdir: decodeURIComponent(url.slice('file://'.length)) };
  return { kind: 'http', url: url.replace(/\/+$/, '') };
}

export type GitCredentials = { username: string; password: string } | { bearerToken: string };

/** A Secret as read from Kubernetes: `data` is base64, `stringData` is plain (either may be absent). */
export interface SecretLike {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/**
 * Turns a Secret into credentials. Accepted shapes:
 * - `username` + `password` (Flux basic auth, Argo CD repository Secrets; extra keys like `url`, `type`, `project` are ignored);
 * - `bearerToken` (Flux): sent as `Authorization: Bearer`;
 * - `token`: sent as basic auth with `username` (default `git`), which GitHub, GitLab and Gitea accept for access tokens;
 * - `password` alone: basic auth as user `git`.
 * Returns an error string when nothing usable is present.
 */
export function credentialsFromSecret(secret: SecretLike): GitCredentials | string {
  const values: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) values[k] = Buffer.from(v, 'base64').toString('utf8');
  for (const [k, v] of Object.entries(secret.stringData ?? {})) values[k] = v;
  const trim = (k: string): string | undefined => (values[k] !== undefined && values[k].trim() !== '' ? values[k].replace(/\r?\n$/, '') : undefined);
  const username = trim('username');
  const password = trim('password');
  const bearer = trim('bearerToken');
  const token = trim('token');
  if (bearer) return { bearerToken: bearer };
  if (password) return { username: username ?? 'git', password };
  if (token) return { username: username ?? 'git', password: token };
  if (trim('sshPrivateKey') || trim('identity')) return 'the Secret holds an SSH key; SSH is not supported, give username/password or a token';
  return 'the Secret has no usable credentials: set username and password, token, or bearerToken';
}

export function authorizationHeader(c: GitCredentials | undefined): Record<string, string> {
  if (!c) return {};
  if ('bearerToken' in c) return { Authorization: `Bearer ${c.bearerToken}` };
  return { Authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` };
}

/** The URL without credentials, for messages and logs. */
export function displayURL(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//');
}
