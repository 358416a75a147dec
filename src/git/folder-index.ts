// Which file of a folder holds which object (match by content identity, never by path; docs/git-engine.md). Kept per folder and brought up to date by walking only the subtrees whose oid changed
// since the last commit, so a foreign edit anywhere in the folder is seen without re-reading the
// other 10,000 files.
import { isTreeMode } from './objects.js';
import type { ObjectStore } from './object-store.js';
import { identitiesInText, identityKey } from './manifest-yaml.js';
import type { IdentityCache } from './identity-cache.js';

const YAML_FILE = /\.ya?ml$/;
const READ_CONCURRENCY = 64;

interface FileInfo {
  blob: string;
  keys: string[];
}

export class FolderIndex {
  private treeOid: string | undefined;
  /** repository-relative file path → what it holds */
  private readonly files = new Map<string, FileInfo>();
  /** identity key → file path; when two files claim one identity the first seen wins */
  private readonly byKey = new Map<string, string>();

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

  /** Brings the index to the folder tree `oid` (undefined: the folder does not exist). */
  async update(oid: string | undefined): Promise<void> {
    if (oid === this.treeOid) return;
    const changed: Array<[string, string]> = [];
    await this.diff(this.treeOid, oid, this.folder, changed);
    // Read changed files concurrently: on first contact with a big folder this is every file,
    // and one-at-a-time reads spend most of their time waiting on the file system.
    const yaml = changed.filter(([path]) => YAML_FILE.test(path));
    const keys: string[][] = new Array(yaml.length);
    const learned: Array<[string, string[]]> = [];
    for (let i = 0; i < yaml.length; i += READ_CONCURRENCY) {
      await Promise.all(yaml.slice(i, i + READ_CONCURRENCY).map(async ([, blob], j) => (keys[i + j] = await this.keysOf(blob, learned))));
    }
    // Applied in tree order, so which of two files claiming one identity wins does not depend on timing.
    yaml.forEach(([path, blob], i) => {
      this.files.set(path, { blob, keys: keys[i] });
      for (const k of keys[i]) if (!this.byKey.has(k)) this.byKey.set(k, path);
    });
    this.identities.add(learned);
    this.treeOid = oid;
  }

  /**
   * Records a commit this engine just made on top of the indexed tree, without reading back what
   * it wrote: `files` maps each changed path to its new identity keys (null: file removed).
   */
  record(folderTree: string | undefined, files: Map<string, { blob: string; keys: string[] } | null>): void {
    this.identities.add([...files.values()].filter((i): i is { blob: string; keys: string[] } => !!i).map((i) => [i.blob, i.keys]));
    for (const [path, info] of files) {
      this.removeFile(path);
      if (!info || !YAML_FILE.test(path)) continue;
      this.files.set(path, info);
      for (const k of info.keys) if (!this.byKey.has(k)) this.byKey.set(k, path);
    }
    this.treeOid = folderTree;
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

  private async keysOf(blob: string, learned: Array<[string, string[]]>): Promise<string[]> {
    let keys = this.identities.get(blob);
    if (!keys) {
      keys = identitiesInText((await this.store.readBlob(blob)).toString('utf8')).map(identityKey);
      learned.push([blob, keys]);
    }
    return keys;
  }

  private removeFile(path: string): void {
    const info = this.files.get(path);
    if (!info) return;
    this.files.delete(path);
    for (const k of info.keys) if (this.byKey.get(k) === path) this.byKey.delete(k);
  }
}
