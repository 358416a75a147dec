// Reads objects through isomorphic-git (loose or packed, with its pack cache) and stages new ones
// in memory until the commit is complete; parsed trees are cached by oid because a tree's content
// never changes, so a 10,000-entry folder tree is parsed once, not on every commit.
import nodeFs from 'node:fs';
import git from 'isomorphic-git';
import { FileSystem } from 'isomorphic-git/models';
import { PackReader } from './pack-reader.js';
import { hashObject, parseTree, serializeTree, writeObjects, type ObjectType, type PendingObject, type TreeEntry } from './objects.js';

// Wrapped once: isomorphic-git otherwise re-probes the fs flavour (a file read) on every call.
export const gitFs = new FileSystem(nodeFs) as unknown as typeof nodeFs;
const fs = gitFs;

/** How long readBlobs runs before it lets other work in. */
const SLICE_MS = 10;
const TREE_CACHE_ENTRIES = 400_000; // total tree entries kept parsed (~100 bytes each)

export class ObjectStore {
  /** isomorphic-git's cache of parsed pack indexes; shared by every call on this repository. */
  readonly gitCache: object = {};
  private readonly trees = new Map<string, TreeEntry[]>();
  private treeEntryCount = 0;
  private pending = new Map<string, PendingObject>();
  private readonly commitTrees = new Map<string, string>();

  /** Packed objects through native zlib (pack-reader.ts); loose ones through isomorphic-git. */
  private readonly packs: PackReader;

  constructor(readonly gitdir: string) {
    this.packs = new PackReader(gitdir);
  }

  async readTree(oid: string): Promise<TreeEntry[]> {
    const hit = this.trees.get(oid);
    if (hit) {
      // Refresh recency (Map keeps insertion order; the oldest is evicted first).
      this.trees.delete(oid);
      this.trees.set(oid, hit);
      return hit;
    }
    const staged = this.pending.get(oid);
    const content = staged ? staged.content : await this.readRaw(oid, 'tree');
    const entries = parseTree(content);
    this.remember(oid, entries);
    return entries;
  }

  /** The tree oid of a commit. */
  async commitTree(oid: string): Promise<string> {
    const known = this.commitTrees.get(oid);
    if (known) return known;
    const staged = this.pending.get(oid);
    const content = staged ? staged.content : await this.readRaw(oid, 'commit');
    const tree = content.toString('latin1', 5, 45);
    if (this.commitTrees.size > 1000) this.commitTrees.clear();
    this.commitTrees.set(oid, tree);
    return tree;
  }

  async readBlob(oid: string): Promise<Buffer> {
    const staged = this.pending.get(oid);
    if (staged) return staged.content;
    return this.readRaw(oid, 'blob');
  }

  /**
   * Reads many blobs, packed ones in pack order (pack-reader.ts inPackOrder), and hands each to
   * `each` with its index in `oids`, in that order rather than the caller's; yields the event loop
   * every few milliseconds.
   */
  async readBlobs(oids: readonly string[], each: (index: number, content: Buffer) => void): Promise<void> {
    let slice = performance.now();
    let n = 0;
    const unstaged: number[] = [];
    for (let i = 0; i < oids.length; i++) {
      const staged = this.pending.get(oids[i]);
      if (staged) each(i, staged.content);
      else unstaged.push(i);
    }
    for (const [j, packed] of this.packs.inPackOrder(unstaged.map((i) => oids[i]))) {
      const i = unstaged[j];
      if (!packed) each(i, await this.readRaw(oids[i], 'blob'));
      else if (packed.type !== 'blob') throw new Error(`object ${oids[i]} is a ${packed.type}, expected a blob`);
      else each(i, packed.object);
      if ((++n & 127) === 0 && performance.now() - slice > SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        slice = performance.now();
      }
    }
  }

  private async readRaw(oid: string, expected: ObjectType): Promise<Buffer> {
    const packed = this.packs.read(oid);
    if (packed) {
      if (packed.type !== expected) throw new Error(`object ${oid} is a ${packed.type}, expected a ${expected}`);
      return packed.object;
    }
    const { type, object } = await git.readObject({ fs, gitdir: this.gitdir, oid, format: 'content', cache: this.gitCache });
    if (type !== expected) throw new Error(`object ${oid} is a ${type}, expected a ${expected}`);
    const bytes = object as Uint8Array;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private remember(oid: string, entries: TreeEntry[]): void {
    if (this.trees.has(oid)) return;
    this.trees.set(oid, entries);
    this.treeEntryCount += entries.length + 1;
    while (this.treeEntryCount > TREE_CACHE_ENTRIES && this.trees.size > 1) {
      const [oldest, old] = this.trees.entries().next().value as [string, TreeEntry[]];
      this.trees.delete(oldest);
      this.treeEntryCount -= old.length + 1;
    }
  }

  stage(type: ObjectType, content: Buffer): string {
    const oid = hashObject(type, content);
    if (!this.pending.has(oid)) this.pending.set(oid, { type, oid, content });
    if (type === 'commit') this.commitTrees.set(oid, content.toString('latin1', 5, 45));
    return oid;
  }

  stageTree(entries: TreeEntry[]): string {
    const oid = this.stage('tree', serializeTree(entries));
    this.remember(oid, entries);
    return oid;
  }

  /** Drops staged objects (a rebuilt attempt stages its own). */
  discardStaged(): void {
    this.pending = new Map();
  }

  /** Writes the staged objects to disk and returns them (a push sends the same ones). */
  async flush(): Promise<PendingObject[]> {
    const objects = [...this.pending.values()];
    this.pending = new Map();
    await writeObjects(this.gitdir, objects);
    return objects;
  }
}
