// The acceptance gate as a library: package export `reverser-apiserver/analyzer`. An onboarding
// tool links exactly the rules the writer enforces (src/analyzer/, run by the git engine's folder
// index before every commit) and gets the same JSON document as `reverser-apiserver analyze
// --format json` and the served RepositoryScan's status. Nothing in src/ imports this file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { scanTree, allAcceptable, type FileTree, type TreeFile } from '../analyzer/scan.js';
import { SCHEMA_VERSION, REASONS, type Finding, type FolderClaim, type FolderVerdict, type FileReport, type ObjectIdentity, type Reason, type ScanReport } from '../analyzer/types.js';
import { createHttpClient } from '../git/http-client.js';
import type { RemoteLimits } from '../git/remote-limits.js';
import { HttpRepository, LocalRepository } from '../git/repository.js';
import { validateRepositoryURL } from '../git/repository-url.js';
import { DirectoryTree, gitDirOf, scanBranch } from '../git/scan-source.js';

export { SCHEMA_VERSION, REASONS, allAcceptable };
export type { Finding, FolderClaim, FolderVerdict, FileReport, ObjectIdentity, Reason, ScanReport, RemoteLimits };

export interface ScanSourceOptions {
  /** An https:// (or http://) URL, a bare repository, a checkout, or a plain directory. */
  repository: string;
  /** The branch to read (default: the repository's HEAD branch). Ignored for a plain directory or `worktree`. */
  branch?: string;
  /** For a checkout: scan the files on disk instead of the branch's commit. */
  worktree?: boolean;
  /** For URLs: HTTP basic or bearer credentials. */
  credentials?: { username: string; password: string } | { bearerToken: string };
  /** Folders other GitTargets claim on this repository and branch (PathConflict). */
  claims?: FolderClaim[];
  /** For URLs: the engine's limits on one remote response (size and time; src/git/remote-limits.ts defaults). */
  remoteLimits?: Partial<RemoteLimits>;
}

export class AnalyzerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnalyzerError';
  }
}

async function scan(opts: ScanSourceOptions, path: string, scope: 'folder' | 'repository'): Promise<ScanReport> {
  const base = { path, scope, claims: opts.claims } as const;
  if (/^https?:\/\//i.test(opts.repository)) {
    const bad = validateRepositoryURL(opts.repository);
    if (bad) throw new AnalyzerError(bad);
    const cache = await mkdtemp(join(tmpdir(), 'reverser-analyze-'));
    try {
      const repo = new HttpRepository(opts.repository.replace(/\/+$/, ''), opts.credentials, cache, createHttpClient(opts.remoteLimits));
      const branch = opts.branch ?? (await repo.defaultBranch()) ?? 'main';
      return await scanBranch(repo, branch, { ...base, repository: repo.display });
    } catch (e) {
      throw new AnalyzerError((e as Error).message);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  }
  const dir = resolve(opts.repository);
  const gitdir = await gitDirOf(dir);
  if (!gitdir || opts.worktree) {
    const tree: FileTree = new DirectoryTree(dir);
    return scanTree(tree, { ...base, repository: dir }).catch((e: Error) => {
      throw new AnalyzerError(`cannot read ${dir}: ${e.message}`);
    });
  }
  const repo = new LocalRepository(gitdir, false);
  const branch = opts.branch || (await repo.defaultBranch());
  if (!branch) throw new AnalyzerError(`${dir} has no branch to scan (HEAD is detached or unborn); pass a branch`);
  return scanBranch(repo, branch, { ...base, repository: dir });
}

/** May this folder become a GitTarget, and if not, why: one verdict, for `path`. */
export function scanFolder(opts: ScanSourceOptions & { path: string }): Promise<ScanReport> {
  return scan(opts, opts.path, 'folder');
}

/** Which folders of this repository (under `path`, default the root) could become GitTargets: a verdict per folder that holds files. */
export function scanRepository(opts: ScanSourceOptions & { path?: string }): Promise<ScanReport> {
  return scan(opts, opts.path ?? '.', 'repository');
}

/** The same rules over files held in memory (e.g. a folder a wizard is about to commit). */
export function scanFiles(files: ReadonlyArray<{ path: string; content: string | Uint8Array }>, opts: { path?: string; scope?: 'folder' | 'repository'; claims?: FolderClaim[] } = {}): Promise<ScanReport> {
  const byPath = new Map(files.map((f) => [f.path, f.content]));
  const tree: FileTree = {
    async files(folder: string): Promise<TreeFile[]> {
      return [...byPath.keys()].filter((p) => folder === '' || p.startsWith(folder + '/')).map((p) => ({ path: p, id: p }));
    },
    async read(f: TreeFile): Promise<Buffer> {
      const c = byPath.get(f.id)!;
      return typeof c === 'string' ? Buffer.from(c, 'utf8') : Buffer.from(c);
    },
  };
  return scanTree(tree, { path: opts.path ?? '.', scope: opts.scope ?? 'folder', claims: opts.claims });
}
