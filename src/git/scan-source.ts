// Where the acceptance gate's scans (src/analyzer/scan.ts) read files from: a commit of a
// repository this engine can open (a cached clone of an https:// remote, a bare repository, a
// checkout's .git), or a plain directory on disk. Reading goes through the same object store as
// commits (src/git/object-store.ts), so the CLI, the library and the served RepositoryScan see
// exactly the bytes the writer would.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { scanTree, type FileTree, type ScanOptions, type TreeFile } from '../analyzer/scan.js';
import type { ScanReport } from '../analyzer/types.js';
import type { Repository } from './repository.js';
import { gitFs, type ObjectStore } from './object-store.js';
import { isTreeMode } from './objects.js';
import { treeAt } from './tree-edit.js';

/** The files of one commit. */
export class CommitTree implements FileTree {
  constructor(
    private readonly store: ObjectStore,
    private readonly commit: string | undefined,
  ) {}

  async files(folder: string): Promise<TreeFile[]> {
    if (!this.commit) return [];
    const root = await this.store.commitTree(this.commit);
    const start = await treeAt(this.store, root, folder);
    const out: TreeFile[] = [];
    if (start) await this.walk(start, folder, out);
    return out;
  }

  private async walk(tree: string, dir: string, out: TreeFile[]): Promise<void> {
    for (const e of await this.store.readTree(tree)) {
      const path = dir ? `${dir}/${e.path}` : e.path;
      if (isTreeMode(e.mode)) await this.walk(e.oid, path, out);
      else if (e.mode !== '160000' && e.mode !== '120000') out.push({ path, id: e.oid }); // no submodules, no symlinks
    }
  }

  read(file: TreeFile): Promise<Buffer> {
    return this.store.readBlob(file.id);
  }

  readEach(files: readonly TreeFile[], each: (index: number, content: Buffer) => void): Promise<void> {
    return this.store.readBlobs(
      files.map((f) => f.id),
      each,
    );
  }
}

/** The files of a directory on disk (a checkout's working tree; .git is skipped, symlinks are not followed). */
export class DirectoryTree implements FileTree {
  constructor(private readonly root: string) {}

  async files(folder: string): Promise<TreeFile[]> {
    const out: TreeFile[] = [];
    await this.walk(folder ? join(this.root, folder) : this.root, folder, out);
    return out;
  }

  private async walk(abs: string, rel: string, out: TreeFile[]): Promise<void> {
    let entries;
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && rel !== '') return;
      throw e;
    }
    for (const e of entries) {
      if (e.name === '.git') continue;
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await this.walk(join(abs, e.name), path, out);
      else if (e.isFile()) out.push({ path, id: join(abs, e.name) });
    }
  }

  read(file: TreeFile): Promise<Buffer> {
    return readFile(file.id);
  }
}

/** The git directory of a local path: a bare repository, or a checkout's `.git`; undefined for a plain directory. */
export async function gitDirOf(path: string): Promise<string | undefined> {
  const isFile = async (p: string) => (await stat(p).catch(() => undefined))?.isFile() ?? false;
  const isDir = async (p: string) => (await stat(p).catch(() => undefined))?.isDirectory() ?? false;
  if ((await isFile(join(path, 'HEAD'))) && (await isDir(join(path, 'objects')))) return path;
  if (await isDir(join(path, '.git'))) return join(path, '.git');
  return undefined;
}

/** The commit a branch of a local git directory points at (HEAD's branch when `branch` is absent). */
export async function resolveBranch(gitdir: string, branch: string | undefined): Promise<{ branch: string | undefined; commit: string | undefined }> {
  let name = branch;
  if (!name) {
    try {
      const head = await git.resolveRef({ fs: gitFs, gitdir, ref: 'HEAD', depth: 2 });
      name = head.startsWith('refs/heads/') ? head.slice('refs/heads/'.length) : undefined;
    } catch {
      name = undefined;
    }
  }
  if (!name) return { branch, commit: undefined };
  try {
    return { branch: name, commit: await git.resolveRef({ fs: gitFs, gitdir, ref: `refs/heads/${name}` }) };
  } catch {
    return { branch: name, commit: undefined };
  }
}

/** Scans a branch of an opened repository (the engine's cached clone or a local bare repository). */
export async function scanBranch(repo: Repository, branch: string, opts: Omit<ScanOptions, 'branch' | 'commit' | 'branchExists'>): Promise<ScanReport> {
  // A branch that does not exist yet starts from the default branch (src/git/repository.ts): the
  // folder then holds what that branch holds, and the writer would start from exactly that.
  const { tip, base } = await repo.sync(branch);
  return scanTree(new CommitTree(repo.store, base), { ...opts, branch, commit: base, branchExists: tip !== undefined });
}
