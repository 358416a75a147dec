// Pure rules about Git destinations, shared by API validation and the git engine.

/** Returns why a repository URL cannot be used, or undefined when it can. */
export function validateRepositoryURL(url: string): string | undefined {
  if (/^(ssh:\/\/|git@|[\w.-]+@[\w.-]+:)/.test(url) || url.startsWith('git+ssh://')) {
    return 'SSH repositories are not supported (the in-process git engine speaks HTTP(S) only); use an https:// URL with a token';
  }
  if (url.startsWith('local:')) {
    const name = url.slice('local:'.length);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name) || name.includes('..')) {
      return 'local:<name> needs a name of letters, digits, ".", "_" and "-" (at most 100 characters)';
    }
    return undefined;
  }
  if (url.startsWith('file://')) {
    const p = url.slice('file://'.length);
    if (!p.startsWith('/')) return 'file:// URLs must name an absolute path (file:///srv/git/repo.git)';
    if (p.split('/').includes('..')) return 'file:// URLs may not contain ".."';
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an https://, http://, file:/// or local:<name> URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return `scheme "${parsed.protocol.replace(/:$/, '')}" is not supported; use https://, http://, file:/// or local:<name>`;
  }
  if (parsed.username || parsed.password) return 'credentials must not be embedded in the URL; use spec.repository.secretRef';
  if (!parsed.hostname) return 'must name a host';
  return undefined;
}

/** Drops trailing slashes ("tenants/a/" → "tenants/a"); "." stays the root. */
export function normalizeTargetPath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? path : trimmed;
}

/** Returns why a folder path is refused, or undefined. Apply normalizeTargetPath first. */
export function validateTargetPath(path: string): string | undefined {
  if (path.startsWith('/')) return 'must be relative to the repository root (no leading "/")';
  if (path.includes('\\')) return 'must use "/" as separator (no "\\")';
  if (path.includes('..')) return 'must not contain ".."';
  if (path !== '.' && path.split('/').some((seg) => seg === '' || seg === '.')) return 'must not contain empty or "." segments';
  if (/[\x00-\x1f\x7f]/.test(path)) return 'must not contain control characters';
  if (path === '.git' || path.startsWith('.git/')) return 'must not point into .git';
  return undefined;
}
