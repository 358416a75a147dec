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

export function parseRepositoryURL(url: string, dataDir: string): RepositoryLocation & { gitdir?: string } {
  const bad = validateRepositoryURL(url);
  if (bad) throw new Error(bad);
  if (url.startsWith('local:')) {
    const name = url.slice('local:'.length);
    return { kind: 'local', name, gitdir: join(dataDir, 'git', `${name}.git`) };
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
