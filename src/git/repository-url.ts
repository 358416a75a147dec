// Repository URLs and credentials. isomorphic-git speaks smart HTTP only; SSH is refused at
// validation so a GitTarget fails fast with a message instead of a transport error later.
import { isAbsolute, join } from 'node:path';

export type RepositoryLocation =
  | { kind: 'http'; url: string }
  | { kind: 'file'; gitdir: string }
  | { kind: 'local'; name: string };

const LOCAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Returns an error message, or undefined when the URL is usable. Pure: touches no file or network. */
export function validateRepositoryURL(url: string): string | undefined {
  if (typeof url !== 'string' || url.trim() === '') return 'repository URL must not be empty';
  if (/^ssh:\/\//i.test(url) || /^[A-Za-z0-9._-]+@[^:/]+:/.test(url) || /^git\+ssh:/i.test(url)) {
    return 'SSH repository URLs are not supported (the git engine, isomorphic-git, speaks HTTP(S) only); use an https:// URL with a token';
  }
  if (url.startsWith('local:')) {
    const name = url.slice('local:'.length);
    return LOCAL_NAME.test(name) && !name.includes('..') && !name.endsWith('.git')
      ? undefined
      : 'local:<name> needs a name of letters, digits, ".", "_" or "-" (no "..", no ".git" suffix)';
  }
  if (url.startsWith('file://')) {
    const path = decodeURIComponent(url.slice('file://'.length));
    if (!path.startsWith('/') || !isAbsolute(path)) return 'file:// URLs must name an absolute path (file:///srv/git/repo.git)';
    if (path.split('/').includes('..')) return 'file:// URLs must not contain ".."';
    return undefined;
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `repository URL "${url}" is not a valid URL`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') {
    return `repository URL scheme "${u.protocol}" is not supported; use https://, http://, file:///path.git or local:<name>`;
  }
  if (!u.hostname) return 'repository URL needs a host';
  if (u.username || u.password) return 'put credentials in the Secret named by secretRef, not in the URL';
  if (u.search || u.hash) return 'repository URL must not have a query or fragment';
  return undefined;
}

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
