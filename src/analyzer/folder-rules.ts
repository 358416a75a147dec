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
 * The namespace a file's place implies for object `o`, when the file sits exactly where the
 * writer would put `o` but for the namespace segment (`{folder}/{namespace}/{group?}/{resource}/
 * {name}.yaml`, src/git/paths.ts), or in `_cluster`; undefined otherwise. '' is the cluster scope.
 * `folder` is normalized (normalizeFolder). Runs for every object and every folder of a scan, so
 * it counts segments instead of splitting the path.
 */
function layoutNamespace(file: string, folder: string, o: ObjectIdentity): string | undefined {
  const start = folder ? folder.length + 1 : 0;
  const first = file.indexOf('/', start);
  const headEnd = first < 0 ? file.length : first;
  if (headEnd - start === 8 && file.startsWith('_cluster', start)) return '';
  const ext = file.endsWith('.yaml') ? 5 : file.endsWith('.yml') ? 4 : 0;
  const nameStart = file.lastIndexOf('/') + 1;
  if (ext === 0 || file.length - ext - nameStart !== o.name.length || !file.startsWith(o.name, nameStart)) return undefined;
  let segments = 1;
  for (let i = first; i >= 0; i = file.indexOf('/', i + 1)) segments++;
  const slash = o.apiVersion.indexOf('/');
  const placed = slash < 0 ? segments === 3 : segments === 4 && file.substring(first + 1, file.indexOf('/', first + 1)) === o.apiVersion.substring(0, slash);
  if (!placed) return undefined;
  const head = file.slice(start, headEnd);
  return NAMESPACE_SEGMENT.test(head) ? head : undefined;
}

export interface AnalyzedFile {
  path: string;
  analysis: FileAnalysis;
  /** Identity keys of the analysis's objects, filled by judgeFolder (a repository scan judges a file once per folder above it). */
  keys?: string[];
}

/** A file's own findings plus what its place in the layout says about the namespaces it holds. */
export function fileFindings(path: string, folder: string, analysis: FileAnalysis): Finding[] {
  const out: Finding[] = [];
  addFileFindings(path, normalizeFolder(folder), analysis, out);
  return out;
}

/** fileFindings for a normalized folder, added to `out` (judgeFolder calls it for every file of every folder). */
function addFileFindings(path: string, folder: string, analysis: FileAnalysis, out: Finding[]): void {
  for (const f of analysis.findings) out.push({ ...f, file: path });
  for (const o of analysis.objects) {
    if (o.namespace === undefined) continue;
    const implied = layoutNamespace(path, folder, o);
    if (implied === undefined || o.namespace === implied) continue;
    const place = implied === '' ? 'the cluster-scoped folder _cluster' : `namespace folder ${implied}`;
    out.push({ reason: 'NamespaceMismatch', message: `is in the ${place} but holds ${o.kind} ${o.name} of namespace ${o.namespace}`, file: path, permanent: true });
  }
}

/** The finding for `path` holding an object `first` already holds (the first in path order keeps it). */
export function duplicateFinding(path: string, o: ObjectIdentity, first: string): Finding {
  const what = `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`;
  const where = first === path ? 'twice in this file' : `also in ${first}`;
  return { reason: 'DuplicateIdentity', message: `holds ${what}, ${where}: one object, one file`, file: path, permanent: true };
}

/** Identity keys a file holds more than once. */
export function withinFileDuplicates(keys: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const k of keys) (seen.has(k) ? twice : seen).add(k);
  return [...twice];
}

function holdsNamespaced(analysis: FileAnalysis): boolean {
  for (const o of analysis.objects) if (o.namespace !== undefined) return true;
  return false;
}

/** The finding for a folder that overlaps another GitTarget's claim. */
export function pathConflictFinding(folder: string, claim: FolderClaim): Finding {
  return { reason: 'PathConflict', message: `folder ${displayFolder(folder)} overlaps folder ${displayFolder(claim.path)} of ${claim.description} on the same repository and branch`, permanent: false };
}

/**
 * The verdict on one folder. `files` are the analyzed manifest files inside it (in path order),
 * `others` the findings of its non-manifest files, `claims` the folders other GitTargets hold on
 * the same repository and branch.
 */
export function judgeFolder(folder: string, files: readonly AnalyzedFile[], others: readonly Finding[] = [], claims: readonly FolderClaim[] = []): FolderVerdict {
  const findings: Finding[] = [...others];
  const firstHolder = new Map<string, string>();
  const normalized = normalizeFolder(folder);
  for (const file of files) {
    const { path, analysis } = file;
    if (analysis.findings.length > 0 || holdsNamespaced(analysis)) addFileFindings(path, normalized, analysis, findings);
    const keys = (file.keys ??= analysis.objects.map(identityKey));
    if (keys.length > 1) for (const k of withinFileDuplicates(keys)) findings.push(duplicateFinding(path, analysis.objects[keys.indexOf(k)], path));
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (i > 0 && keys.indexOf(key) !== i) continue;
      const holder = firstHolder.get(key);
      if (holder === undefined) firstHolder.set(key, path);
      else findings.push(duplicateFinding(path, analysis.objects[i], holder));
    }
  }
  for (const c of claims) if (foldersOverlap(folder, c.path)) findings.push(pathConflictFinding(folder, c));
  return { path: displayFolder(folder), acceptable: findings.length === 0, findings: sortFindings(findings) };
}

export function sortFindings(findings: Finding[]): Finding[] {
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return findings.sort((a, b) => cmp(a.file ?? '', b.file ?? '') || cmp(a.reason, b.reason) || cmp(a.message, b.message));
}
