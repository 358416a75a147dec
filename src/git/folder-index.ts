// Which file of a folder holds which object (match by content identity, never by path;
// docs/git-engine.md), and what the acceptance gate says of the folder
// (src/analyzer/folder-rules.ts). Kept per folder and brought up to date by walking only the
// subtrees whose oid changed since the last commit, so a foreign edit anywhere in the folder is
// seen without re-reading the other 10,000 files; the gate's verdict is kept incrementally too
// (the files with findings and the identities held twice), so judging costs nothing per commit.
import { isTreeMode } from './objects.js';
import type { ObjectStore } from './object-store.js';
import { analyzeManifest, needsReading, nonYamlFinding } from '../analyzer/file-rules.js';
import { duplicateFinding, fileFindings, sortFindings, withinFileDuplicates } from '../analyzer/folder-rules.js';
import type { Finding, ObjectIdentity } from '../analyzer/types.js';
import type { CachedFile, IdentityCache } from './identity-cache.js';

const READ_CONCURRENCY = 64;

interface FileInfo {
  blob: string;
  keys: string[];
  /** The gate's findings on this file (its own and its place in the layout). */
  findings: Finding[];
}

/** `group|kind|namespace|name` back to an identity (apiVersion carries only the group). */
export function identityOfKey(key: string): ObjectIdentity {
  const [group, kind, namespace, ...name] = key.split('|');
  return { apiVersion: group ? `${group}/` : '', kind, ...(namespace ? { namespace } : {}), name: name.join('|') };
}

export class FolderIndex {
  private treeOid: string | undefined;
  /** repository-relative manifest path → what it holds */
  private readonly files = new Map<string, FileInfo>();
  /** identity key → file path; when two files claim one identity the first in path order wins */
  private readonly byKey = new Map<string, string>();
  /** identity key → every file holding it (only kept while more than one does) */
  private readonly holders = new Map<string, Set<string>>();
  private readonly keyCount = new Map<string, number>();
  /** paths of manifest files with findings, and the findings of non-manifest files */
  private readonly withFindings = new Set<string>();
  private readonly otherFindings = new Map<string, Finding>();

  constructor(
    private readonly store: ObjectStore,
    private readonly identities: IdentityCache,
    /** repository-relative folder ('' = root) */
    readonly folder: string,
  ) {}

  fileOf(key: string): string | undefined {
    return this.byKey.get(key);
  }

  keysIn(path: string): string[] {
    return this.files.get(path)?.keys ?? [];
  }

  /** Identity keys of every object in the indexed folder tree, one per identity (files that do not parse hold none). */
  allKeys(): string[] {
    return [...this.byKey.keys()];
  }

  /** What the acceptance gate finds in the folder (empty: the writer may own it), sorted. */
  refusal(): Finding[] {
    const out: Finding[] = [...this.otherFindings.values()];
    for (const p of this.withFindings) out.push(...this.files.get(p)!.findings);
    for (const [key, paths] of this.holders) {
      const sorted = [...paths].sort();
      for (const p of sorted.slice(1)) out.push(duplicateFinding(p, identityOfKey(key), sorted[0]));
    }
    return sortFindings(out);
  }

  /** Brings the index to the folder tree `oid` (undefined: the folder does not exist). */
  async update(oid: string | undefined): Promise<void> {
    if (oid === this.treeOid) return;
    const changed: Array<[string, string]> = [];
    await this.diff(this.treeOid, oid, this.folder, changed);
    // Read changed files concurrently: on first contact with a big folder this is every file,
    // and one-at-a-time reads spend most of their time waiting on the file system.
    const manifests = changed.filter(([path]) => needsReading(path));
    const analyses: CachedFile[] = new Array(manifests.length);
    const learned: Array<[string, CachedFile]> = [];
    for (let i = 0; i < manifests.length; i += READ_CONCURRENCY) {
      await Promise.all(manifests.slice(i, i + READ_CONCURRENCY).map(async ([path, blob], j) => (analyses[i + j] = await this.analysisOf(path, blob, learned))));
    }
    // Applied in tree order, so which of two files claiming one identity wins does not depend on timing.
    manifests.forEach(([path, blob], i) => this.addFile(path, blob, analyses[i]));
    for (const [path] of changed) {
      const other = nonYamlFinding(path);
      if (other) this.otherFindings.set(path, { ...other, file: path });
    }
    this.identities.add(learned);
    this.treeOid = oid;
  }

  /**
   * Records a commit this engine just made on top of the indexed tree, without reading back what
   * it wrote: `files` maps each changed path to its new identity keys (null: file removed).
   */
  record(folderTree: string | undefined, files: Map<string, { blob: string; keys: string[] } | null>): void {
    const written = [...files].filter((e): e is [string, { blob: string; keys: string[] }] => !!e[1]);
    this.identities.add(written.map(([, i]) => [i.blob, { keys: i.keys, findings: [] }]));
    for (const [path, info] of files) {
      this.removeFile(path);
      if (info && needsReading(path)) this.addFile(path, info.blob, { keys: info.keys, findings: [] });
    }
    this.treeOid = folderTree;
  }

  private addFile(path: string, blob: string, a: CachedFile): void {
    const objects = a.keys.map(identityOfKey);
    const findings = fileFindings(path, this.folder, { objects, findings: a.findings });
    const unique = [...new Set(a.keys)];
    for (const k of withinFileDuplicates(a.keys)) findings.push(duplicateFinding(path, identityOfKey(k), path));
    this.files.set(path, { blob, keys: unique, findings });
    if (findings.length) this.withFindings.add(path);
    for (const k of unique) {
      if (!this.byKey.has(k)) this.byKey.set(k, path);
      const n = (this.keyCount.get(k) ?? 0) + 1;
      this.keyCount.set(k, n);
      let set = this.holders.get(k);
      if (n > 1 && !set) this.holders.set(k, (set = new Set(this.pathsHolding(k, path))));
      set?.add(path);
    }
  }

  /** Every path already indexed that holds `key` (only when a second holder appears: rare). */
  private pathsHolding(key: string, except: string): string[] {
    const out: string[] = [];
    for (const [p, info] of this.files) if (p !== except && info.keys.includes(key)) out.push(p);
    return out;
  }

  private async diff(oldOid: string | undefined, newOid: string | undefined, dir: string, changed: Array<[string, string]>): Promise<void> {
    if (oldOid === newOid) return;
    const oldEntries = oldOid ? await this.store.readTree(oldOid) : [];
    const newEntries = newOid ? await this.store.readTree(newOid) : [];
    const oldByName = new Map(oldEntries.map((e) => [e.path + (isTreeMode(e.mode) ? '/' : ''), e.oid]));
    const seen = new Set<string>();
    for (const e of newEntries) {
      const tree = isTreeMode(e.mode);
      const name = e.path + (tree ? '/' : '');
      seen.add(name);
      const before = oldByName.get(name);
      if (before === e.oid) continue;
      const path = dir ? `${dir}/${e.path}` : e.path;
      if (tree) await this.diff(before, e.oid, path, changed);
      else if (e.mode !== '160000' && e.mode !== '120000') {
        this.removeFile(path);
        changed.push([path, e.oid]);
      }
    }
    for (const [name, before] of oldByName) {
      if (seen.has(name)) continue;
      const path = dir ? `${dir}/${name.replace(/\/$/, '')}` : name.replace(/\/$/, '');
      if (name.endsWith('/')) await this.diff(before, undefined, path, changed);
      else this.removeFile(path);
    }
  }

  private async analysisOf(path: string, blob: string, learned: Array<[string, CachedFile]>): Promise<CachedFile> {
    let a = this.identities.get(blob);
    if (!a) {
      const analysis = analyzeManifest(path, (await this.store.readBlob(blob)).toString('utf8'));
      a = { keys: analysis.objects.map(keyOf), findings: analysis.findings };
      learned.push([blob, a]);
    }
    return a;
  }

  private removeFile(path: string): void {
    this.otherFindings.delete(path);
    const info = this.files.get(path);
    if (!info) return;
    this.files.delete(path);
    this.withFindings.delete(path);
    for (const k of info.keys) {
      const n = (this.keyCount.get(k) ?? 1) - 1;
      if (n <= 0) this.keyCount.delete(k);
      else this.keyCount.set(k, n);
      const set = this.holders.get(k);
      if (set) {
        set.delete(path);
        if (set.size <= 1) this.holders.delete(k);
      }
      if (this.byKey.get(k) === path) {
        this.byKey.delete(k);
        // Another file holding the same object takes over (the first in path order).
        const next = set && set.size ? [...set].sort()[0] : n > 0 ? this.pathsHolding(k, path).sort()[0] : undefined;
        if (next) this.byKey.set(k, next);
      }
    }
  }
}

function keyOf(o: ObjectIdentity): string {
  const slash = o.apiVersion.indexOf('/');
  return `${slash < 0 ? '' : o.apiVersion.slice(0, slash)}|${o.kind}|${o.namespace ?? ''}|${o.name}`;
}
