// File layout in the repository (design §6, digest §3.1).

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

export interface CanonicalPathInput {
  /** The GitTarget folder ("." or "" for the root). */
  path: string;
  /** Empty or undefined for cluster-scoped objects. */
  namespace?: string;
  /** Empty or undefined for the core group. */
  group?: string;
  /** Plural resource name, e.g. "configmaps". */
  resource: string;
  name: string;
}

/** `{path}/{namespace or _cluster}/{group, omitted for core}/{resource}/{name}.yaml` */
export function canonicalPath(input: CanonicalPathInput): string {
  // `_cluster` cannot clash with a namespace: namespaces may not contain "_".
  const segments = [normalizeTargetPath(input.path), input.namespace || '_cluster', input.group ?? '', input.resource, `${input.name}.yaml`];
  return segments.filter((s) => s !== '').join('/');
}
