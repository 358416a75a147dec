// The main thread's handle on the git engine worker: the same commit() as GitEngine, answered by
// a worker thread (worker-thread.ts), so building and pushing a commit never blocks the API.
// A worker that dies fails its in-flight commits with a typed error and is restarted on the next
// commit; commits are idempotent (a re-applied change is AlreadyPresent), so callers just retry.
import { Worker } from 'node:worker_threads';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { CommitInput, CommitResult, FolderInput, GitEngineOptions, ObjectRef, ScanInput } from './engine.js';
import type { ScanReport } from '../analyzer/types.js';
import { GitEngineError, type GitErrorReason } from './errors.js';
import type { LeaseProvider } from './lease.js';
import type { FromWorker, ToWorker, WorkerEngineOptions } from './worker-protocol.js';

export interface CommitEngine {
  commit(input: CommitInput): Promise<CommitResult>;
  close(): Promise<void>;
  /** Starts what the first commit would otherwise wait for (the worker thread and its modules). */
  warm?(): void;
  /** The objects in a folder at the branch head (GitEngine.listFolder). */
  listFolder?(input: FolderInput): Promise<ObjectRef[]>;
  /** The acceptance gate over a branch of a repository (GitEngine.scan): the served RepositoryScan. */
  scan?(input: ScanInput): Promise<ScanReport>;
}

/** Changes per message when a commit is copied to the worker in slices. */
const SLICE = 500;

export type GitWorkerOptions = Omit<GitEngineOptions, 'lease' | 'http'> & { lease?: LeaseProvider };

export class GitWorker implements CommitEngine {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(r: never): void; reject(e: Error): void }>();
  private closed = false;
  readonly holder: string;

  constructor(private readonly opts: GitWorkerOptions) {
    // One holder id for the whole process, even across worker restarts, so a restarted worker
    // re-acquires (extends) its own branch leases instead of waiting for them to expire.
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  }

  commit(input: CommitInput): Promise<CommitResult> {
    const id = this.nextId++;
    if (input.changes.length <= SLICE) return this.call({ type: 'commit', id, input });
    // A large commit (a snapshot) is copied to the worker in slices, each its own task on the
    // event loop: one structured clone of 10,000 objects held up the API for ~20 ms.
    // All slices and the commit go to one worker: one that died meanwhile fails the commit (retryable),
    // never lets a new worker commit part of the changes.
    return (async () => {
      if (this.closed) throw new GitEngineError('Unreachable', 'the git engine is shut down', true);
      const w = this.ensure();
      const gone = () => new GitEngineError('Unreachable', 'the git engine worker stopped while a commit was handed to it', true);
      for (let i = 0; i < input.changes.length; i += SLICE) {
        if (this.worker !== w) throw gone();
        w.postMessage({ type: 'changes', id, changes: input.changes.slice(i, i + SLICE) } satisfies ToWorker);
        await new Promise((r) => setImmediate(r));
      }
      if (this.worker !== w) throw gone();
      return this.callOn<CommitResult>(w, { type: 'commit', id, input: { ...input, changes: [] } });
    })();
  }

  listFolder(input: FolderInput): Promise<ObjectRef[]> {
    return this.call({ type: 'list', id: this.nextId++, input });
  }

  scan(input: ScanInput): Promise<ScanReport> {
    return this.call({ type: 'scan', id: this.nextId++, input });
  }

  private call<T>(msg: Extract<ToWorker, { type: 'commit' | 'list' | 'scan' }>): Promise<T> {
    if (this.closed) return Promise.reject(new GitEngineError('Unreachable', 'the git engine is shut down', true));
    return this.callOn(this.ensure(), msg);
  }

  private callOn<T>(w: Worker, msg: Extract<ToWorker, { type: 'commit' | 'list' | 'scan' }>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.set(msg.id, { resolve: resolve as (r: never) => void, reject });
      // Work in flight keeps the process alive; an idle worker does not.
      w.ref();
      w.postMessage(msg);
    });
  }

  warm(): void {
    // An idle worker does not keep the process alive (ensure() unrefs it), so this costs only memory.
    if (!this.closed) this.ensure();
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
    this.failAll('the git engine is shut down');
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const { lease, ...rest } = this.opts;
    const data: WorkerEngineOptions = { ...rest, holder: this.holder, useLeases: lease !== undefined };
    const w = new Worker(new URL('./worker-thread.js', import.meta.url), { workerData: data });
    w.on('message', (msg: FromWorker) => this.onMessage(w, msg));
    w.on('error', (e) => {
      if (this.worker === w) this.worker = undefined;
      this.failAll(`the git engine worker failed: ${e.message}`);
    });
    w.on('exit', (code) => {
      if (this.worker === w) this.worker = undefined;
      if (!this.closed) this.failAll(`the git engine worker exited (code ${code})`);
    });
    // An idle worker must not keep the process alive.
    w.unref();
    this.worker = w;
    return w;
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new GitEngineError('Unreachable', message, true));
    this.pending.clear();
  }

  private onMessage(w: Worker, msg: FromWorker): void {
    if (msg.type === 'lease') {
      const lease = this.opts.lease;
      const call = lease ? (lease[msg.op] as (...a: unknown[]) => Promise<unknown>).apply(lease, msg.args) : Promise.reject(new Error('no lease store'));
      call.then(
        (value) => w.postMessage({ type: 'lease-reply', id: msg.id, ok: true, value } satisfies ToWorker),
        (e: Error) => w.postMessage({ type: 'lease-reply', id: msg.id, ok: false, message: e?.message ?? String(e) } satisfies ToWorker),
      );
      return;
    }
    const p = this.pending.get(msg.id);
    this.pending.delete(msg.id);
    if (this.pending.size === 0) w.unref();
    if (!p) return;
    if (msg.ok) p.resolve((msg.type === 'listing' ? msg.refs : msg.type === 'scanned' ? msg.report : msg.result) as never);
    else p.reject(new GitEngineError(msg.reason === 'Internal' ? 'Unreachable' : (msg.reason as GitErrorReason), msg.message, msg.retryable));
  }
}
