// Several git engine worker threads behind the one CommitEngine the controllers use. Each
// repository always goes to the same worker (a hash of what names it), so:
// - commits to one repository (hence one branch) stay serialized by that worker's engine, in the
//   order they were handed over (src/git/engine.ts `serialized`), and keep its cached clone warm;
// - different repositories commit in parallel on as many threads as there are workers.
// A worker that dies fails only its own in-flight commits (worker.ts); they are retried as before.
import { createHash } from 'node:crypto';
import type { CommitInput, CommitResult, FolderInput, ObjectRef, RepositoryInput, ScanInput } from './engine.js';
import type { ScanReport } from '../analyzer/types.js';
import { GitWorker, type CommitEngine, type CommitOptions, type GitWorkerOptions } from './worker.js';
import { defaultGitWorkers } from './worker-pool-size.js';


/**
 * What makes two inputs the same repository for the routing: the URL, and for `local:` names the
 * tenant too (they are partitioned per logical cluster and namespace: src/git/repository-url.ts).
 * Credentials are left out on purpose: two GitTargets pushing to one remote with different
 * credentials still go through one worker, so their commits to a branch stay in order here too.
 */
export function routingKey(r: RepositoryInput): string {
  return r.url.startsWith('local:') ? `${r.url}\0${r.tenant?.cluster ?? ''}\0${r.tenant?.namespace ?? ''}` : r.url;
}

/**
 * A well-mixed 32-bit hash, stable across processes and restarts, so a repository keeps its
 * worker. (Not FNV-1a: its low bit is the parity of the characters' low bits, and a local: key
 * names its tenant's namespace twice, so every tenant's key landed on the same one of two workers.)
 */
function hash(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32BE(0);
}

export class GitWorkerPool implements CommitEngine {
  private readonly workers: GitWorker[];
  readonly holder: string;

  constructor(opts: GitWorkerOptions, size: number = defaultGitWorkers()) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`a git worker pool needs at least one worker, got ${size}`);
    const first = new GitWorker(opts);
    // One lease holder for the whole process: a branch lease is this process's whichever thread took it.
    this.holder = first.holder;
    this.workers = [first, ...Array.from({ length: size - 1 }, () => new GitWorker({ ...opts, holder: first.holder }))];
  }

  get size(): number {
    return this.workers.length;
  }

  /** The worker that owns a repository. */
  workerFor(r: RepositoryInput): GitWorker {
    return this.workers[this.workers.length === 1 ? 0 : hash(routingKey(r)) % this.workers.length]!;
  }

  commit(input: CommitInput, opts?: CommitOptions): Promise<CommitResult> {
    return this.workerFor(input.repository).commit(input, opts);
  }

  listFolder(input: FolderInput): Promise<ObjectRef[]> {
    return this.workerFor(input.repository).listFolder(input);
  }

  scan(input: ScanInput): Promise<ScanReport> {
    return this.workerFor(input.repository).scan(input);
  }

  warm(repository?: RepositoryInput): void {
    if (repository) this.workerFor(repository).warm();
    else for (const w of this.workers) w.warm();
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }
}
