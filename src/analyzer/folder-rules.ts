// The gate's rules for a folder, over the analyses of its files (src/analyzer/file-rules.ts): every
// file's own findings, identities claimed twice, namespaces the layout implies, and folders other
// GitTargets claim. Pure: the scans (src/analyzer/scan.ts) and the git engine's folder index
// (src/git/folder-index.ts) both decide with it.
import type { FileAnalysis } from './file-rules.js';
import type { Finding, FolderClaim, FolderVerdict, ObjectIdentity } from './types.js';

/** "." and "" are the root; a trailing "/" is dropped. */
export function normalizeFolder(path: string): string {
  const p = path.replace(/\/+$/, '');
  return p === '.' ? '' : p;
}

export function displayFolder(path: string): string {
  return normalizeFolder(path) || '.';
}

/** Two folders overlap when they are equal or one holds the other (the root holds every folder). */
export function foldersOverlap(a: string, b: string): boolean {
  const x = normalizeFolder(a);
  const y = normalizeFolder(b);
  return x === y || x === '' || y === '' || x.startsWith(y + '/') || y.startsWith(x + '/');
}

/** True when `file` lies inside `folder`. */
export function inFolder(file: string, folder: string): boolean {
  const f = normalizeFolder(folder);
  return f === '' || file.startsWith(f + '/');
}

export function identityKey(id: ObjectIdentity): string {
  const slash = id.apiVersion.indexOf('/');
  return `${slash < 0 ? '' : id.apiVersion.slice(0, slash)}|${id.kind}|${id.namespace ?? ''}|${id.name}`;
}

const NAMESPACE_SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The namespace a file's place in the layout implies (`{folder}/{namespace or _cluster}/{group?}/
 * {resource}/{name}.yaml`, src/git/paths.ts), or undefined when the file is not at a layout
 * position. '' means the cluster scope.
 */
function layoutNamespace(file: string, folder: string): string | undefined {
  const f = normalizeFolder(folder);
  const rel = (f ? file.slice(f.length + 1) : file).split('/');
  if (rel[0] === '_cluster') return '';
  const canonical = rel.length === 3 || (rel.length === 4 && rel[1].includes('.'));
  return canonical && NAMESPACE_SEGMENT.test(rel[0]) ? rel[0] : undefined;
}

export interface AnalyzedFile {
  path: string;
  analysis: FileAnalysis;
}

/**
 * The verdict on one folder. `files` are the analyzed manifest files inside it (in path order),
 * `others` the findings of its non-manifest files, `claims` the folders other GitTargets hold on
 * the same repository and branch.
 */
export function judgeFolder(folder: string, files: readonly AnalyzedFile[], others: readonly Finding[] = [], claims: readonly FolderClaim[] = []): FolderVerdict {
  const findings: Finding[] = [...others];
  const firstHolder = new Map<string, string>();
  for (const { path, analysis } of files) {
    for (const f of analysis.findings) findings.push({ ...f, file: path });
    const implied = layoutNamespace(path, folder);
    for (const o of analysis.objects) {
      const key = identityKey(o);
      const holder = firstHolder.get(key);
      if (holder === undefined) firstHolder.set(key, path);
      else {
        const what = `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`;
        const where = holder === path ? 'twice in the same file' : `also in ${holder}`;
        findings.push({ reason: 'DuplicateIdentity', message: `${path} holds ${what}, ${where}: one object, one file`, file: path, permanent: true });
      }
      if (implied !== undefined && o.namespace !== undefined && o.namespace !== implied) {
        const place = implied === '' ? 'the cluster-scoped folder _cluster' : `namespace folder ${implied}`;
        findings.push({ reason: 'NamespaceMismatch', message: `${path} is in the ${place} but holds ${o.kind} ${o.name} of namespace ${o.namespace}`, file: path, permanent: true });
      }
    }
  }
  for (const c of claims) {
    if (foldersOverlap(folder, c.path)) {
      findings.push({ reason: 'PathConflict', message: `folder ${displayFolder(folder)} overlaps folder ${displayFolder(c.path)} of ${c.description} on the same repository and branch`, permanent: false });
    }
  }
  return { path: displayFolder(folder), acceptable: findings.length === 0, findings: sortFindings(findings) };
}

export function sortFindings(findings: Finding[]): Finding[] {
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return findings.sort((a, b) => cmp(a.file ?? '', b.file ?? '') || cmp(a.reason, b.reason) || cmp(a.message, b.message));
}
