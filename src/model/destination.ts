// Where a GitTarget writes: the rules for its repository URL and its folder. Pure functions (no
// file or network access), shared by the API's validation (src/api) and the git engine (src/git),
// so neither layer imports the other for them.
import { isAbsolute } from 'node:path';
import { builtinEgressRefusal } from '../net/egress.js';

/** The refusal of a tenant's file:// repository (src/git/engine.ts, the mirror's Validated condition). */
export const FILE_REPOSITORIES_DISABLED =
  'file:// repositories are disabled on this server: a path on the server\'s disk is not partitioned per tenant (an operator may allow them with --allow-file-repositories); use local:<name>, kept per namespace, or an https:// URL';

/** The refusal of credentials over plain http (src/git/engine.ts, the mirror's Validated condition). */
export function insecureCredentials(url: string): string {
  return `the credentials in spec.repository.secretRef would be sent in cleartext to ${url.replace(/\/\/[^@/]*@/, '//')}; use https:// (the server's --allow-insecure-credentials is for development only)`;
}

/**
 * What a GitTarget's destination may not be on this server, beyond the static rules: a file://
 * path (unless allowed), credentials over http:// (unless allowed). Undefined when fine.
 */
export function destinationRefusal(
  repository: { url?: unknown; secretRef?: unknown } | undefined,
  allow: { fileRepositories?: boolean; insecureCredentials?: boolean },
): { reason: string; message: string } | undefined {
  const url = typeof repository?.url === 'string' ? repository.url : '';
  if (url.startsWith('file://') && !allow.fileRepositories) return { reason: 'FileRepositoryNotAllowed', message: FILE_REPOSITORIES_DISABLED };
  if (url.startsWith('http://') && repository?.secretRef && !allow.insecureCredentials) return { reason: 'InsecureCredentials', message: insecureCredentials(url) };
  return undefined;
}

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
  const egress = builtinEgressRefusal(u.hostname);
  if (egress) return `repository URL host ${egress}`;
  if (u.username || u.password) return 'put credentials in the Secret named by secretRef, not in the URL';
  if (u.search || u.hash) return 'repository URL must not have a query or fragment';
  return undefined;
}

/**
 * Validates a GitTarget `spec.path`. Returns an error message, or undefined when valid.
 * Rules: no leading "/", no backslash, no ".." anywhere; "." means the repository root.
 */
export function validateTargetPath(path: string): string | undefined {
  if (typeof path !== 'string') return 'path must be a string';
  if (path.startsWith('/')) return 'path must be relative to the repository root (no leading "/")';
  if (path.includes('\\')) return 'path must use "/" as separator (no backslash)';
  if (path.includes('..')) return 'path must not contain ".."';
  if (/[\0\n\r]/.test(path)) return 'path must not contain control characters';
  const norm = normalizeTargetPath(path);
  if (norm.split('/').some((s) => s === '' || s === '.' || s === '.git')) {
    return norm === '' ? undefined : 'path must not contain empty, "." or ".git" segments';
  }
  return undefined;
}

/** "." and "" become "" (the root); a trailing "/" is dropped. Call after validateTargetPath. */
export function normalizeTargetPath(path: string): string {
  let p = path;
  while (p.endsWith('/')) p = p.slice(0, -1);
  if (p === '.' || p === '') return '';
  if (p.startsWith('./')) p = p.slice(2);
  return p;
}

/**
 * Which repository a GitTarget writes, as one string: `local:` repositories live inside their
 * logical cluster and namespace (src/git/repository-url.ts); two GitTargets fight over a folder only when this is equal (src/controllers/mirror/path-claims.ts), remote URLs are one repository
 * whoever names them (host case and a trailing ".git" or "/" do not make another).
 */
export function repositoryIdentity(cluster: string, namespace: string, url: string): string {
  if (url.startsWith('local:')) return `local:${cluster}/${namespace}/${url.slice('local:'.length)}`;
  if (url.startsWith('file://')) return url.replace(/\/+$/, '').replace(/\.git$/, '');
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, '').replace(/\.git$/, '')}`;
  } catch {
    return url;
  }
}

