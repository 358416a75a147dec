// Applies file writes and deletes to a root tree, rewriting only the trees on the changed paths:
// a one-file change in a 10,000-file folder stages one blob, a handful of trees and a commit.
import { compareTreeEntries, isTreeMode, type TreeEntry } from './objects.js';
import type { ObjectStore } from './object-store.js';

/** path (relative to the repository root, '/'-separated) → new blob oid, or null to delete. */
export type FileEdits = Map<string, string | null>;

interface DirNode {
  files: Map<string, string | null>;
  dirs: Map<string, DirNode>;
}

function buildEditTree(edits: FileEdits): DirNode {
  const root: DirNode = { files: new Map(), dirs: new Map() };
  for (const [path, oid] of edits) {
    const parts = path.split('/');
    let node = root;
    for (const seg of parts.slice(0, -1)) {
      let next = node.dirs.get(seg);
      if (!next) node.dirs.set(seg, (next = { files: new Map(), dirs: new Map() }));
      node = next;
    }
    node.files.set(parts[parts.length - 1], oid);
  }
  return root;
}

function findIndex(entries: TreeEntry[], probe: TreeEntry): { index: number; found: boolean } {
  // Binary search in git order; an entry of the same name may exist as a tree or as a file.
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareTreeEntries(entries[mid], probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  const found = lo < entries.length && entries[lo].path === probe.path && isTreeMode(entries[lo].mode) === isTreeMode(probe.mode);
  return { index: lo, found };
}

function removeNamed(entries: TreeEntry[], name: string, asTree: boolean): void {
  const { index, found } = findIndex(entries, { mode: asTree ? '040000' : '100644', path: name, oid: '' });
  if (found) entries.splice(index, 1);
}

function upsert(entries: TreeEntry[], entry: TreeEntry): void {
  const { index, found } = findIndex(entries, entry);
  if (found) {
    // Keep an executable bit a human set; only the content is ours.
    const mode = isTreeMode(entry.mode) ? entry.mode : entries[index].mode;
    entries[index] = { ...entry, mode };
  } else entries.splice(index, 0, entry);
}

async function applyNode(store: ObjectStore, treeOid: string | undefined, node: DirNode): Promise<string | undefined> {
  const entries = treeOid ? [...(await store.readTree(treeOid))] : [];
  for (const [name, child] of node.dirs) {
    const { index, found } = findIndex(entries, { mode: '040000', path: name, oid: '' });
    const newOid = await applyNode(store, found ? entries[index].oid : undefined, child);
    if (newOid === undefined) {
      if (found) entries.splice(index, 1);
    } else {
      // A file of the same name would make the path ambiguous; the object's file wins the name.
      removeNamed(entries, name, false);
      upsert(entries, { mode: '040000', path: name, oid: newOid });
    }
  }
  for (const [name, oid] of node.files) {
    if (oid === null) removeNamed(entries, name, false);
    else {
      removeNamed(entries, name, true);
      upsert(entries, { mode: '100644', path: name, oid });
    }
  }
  // Git stores no empty trees: a directory whose last file went disappears.
  if (entries.length === 0) return undefined;
  return store.stageTree(entries);
}

/** Returns the new root tree oid (the empty tree's oid when everything was deleted). */
export async function applyEdits(store: ObjectStore, rootTree: string | undefined, edits: FileEdits): Promise<string> {
  const oid = await applyNode(store, rootTree, buildEditTree(edits));
  return oid ?? store.stageTree([]);
}

/** The oid of the tree at `path` ('' = root), or undefined when it does not exist. */
export async function treeAt(store: ObjectStore, rootTree: string | undefined, path: string): Promise<string | undefined> {
  let oid = rootTree;
  if (!path) return oid;
  for (const seg of path.split('/')) {
    if (!oid) return undefined;
    const entries = await store.readTree(oid);
    const e = entries.find((x) => x.path === seg && isTreeMode(x.mode));
    oid = e?.oid;
  }
  return oid;
}
