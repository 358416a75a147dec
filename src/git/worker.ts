// The main thread's handle on the git engine worker: the same commit() as GitEngine, answered by
// a worker thread (worker-thread.ts), so building and pushing a commit never blocks the API.
// A worker that dies fails its in-flight commits with a typed error and is restarted on the next
// commit; commits are idempotent (a re-applied change is AlreadyPresent), so callers just retry.
import { Worker } from 'node:worker_threads';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { CommitInput, CommitResult, FolderInput, GitEngineOptions, ObjectRef, RepositoryInput, ScanInput } from './engine.js';
import type { ScanReport } from '../analyzer/types.js';
import { GitEngineError, type GitErrorReason } from './errors.js';
import type { LeaseProvider } from './lease.js';
import type { FromWorker, ToWorker, WorkerEngineOptions } from './worker-protocol.js';

export interface CommitOptions {
  /** Aborting it stops the commit's remote work at once; the commit then fails with Cancelled. */
  signal?: AbortSignal;
  /**
   * The commit of an edit (a window of changes, not a snapshot): its worker then stays on for
   * keepWarmMs after it instead of idleExitMs, so that the next edits of a repository in use find
   * a worker with its modules compiled and the repository's folder index loaded. A snapshot alone
   * does not keep it: a server that only mirrored at start gives the memory back after idleExitMs.
   */
  edit?: boolean;
}

export interface CommitEngine {
  commit(input: CommitInput, opts?: CommitOptions): Promise<CommitResult>;
  close(): Promise<void>;
  /**
   * Starts what the first commit would otherwise wait for (the worker thread and its modules): the
   * worker of that repository, or every worker when none is named.
   */
  warm?(repository?: RepositoryInput): void;
  /** The objects in a folder at the branch head (GitEngine.listFolder). */
  listFolder?(input: FolderInput): Promise<ObjectRef[]>;
  /** The acceptance gate over a branch of a repository (GitEngine.scan): the served RepositoryScan. */
  scan?(input: ScanInput): Promise<ScanReport>;
}

/** Changes per message when a commit is copied to the worker in slices. */
const SLICE = 500;
/**
 * The worker's young generation, in MiB (V8 splits it into two semi-spaces and a large-object
 * space, so 6 is 2 MiB semi-spaces, the size --max-semi-space-size=2 gives the main thread).
 */
const WORKER_YOUNG_GENERATION_MB = 6;

/**
 * How long a worker with nothing to do lives on. It is then ended, and the next call starts a new
 * one: an idle worker costs ~18 MiB of resident memory after a 1,000-object snapshot (its own V8
 * heap, its modules, the folder indexes) and wakes up for its own garbage collection, where the
 * main thread at rest should do nothing (`npm run bench -- peer`, docs/architecture.md "At rest and
 * at start-up"). What it held is on disk (clones under <data-dir>/cache, `local:` repositories), so
 * a new worker only re-reads the folder index of the first commit's repository.
 */
export const WORKER_IDLE_EXIT_MS = 30_000;

/**
 * How long a worker lives on after it was handed an edit's commit (CommitOptions.edit). A worker
 * that starts again costs its next commits ~350 CPU-ms of module loading (unbundled; ~115 from the
 * image's bundle) and each repository's first commit ~5 CPU-ms more for its folder index, and runs
 * its first commits on code V8 has not optimized yet; a GitTarget that is edited every minute
 * would pay that on every edit with the idle exit alone.
 */
export const WORKER_KEEP_WARM_AFTER_EDIT_MS = 5 * 60_000;

export type GitWorkerOptions = Omit<GitEngineOptions, 'lease' | 'http'> & {
  lease?: LeaseProvider;
  /** How long an idle worker lives on (default WORKER_IDLE_EXIT_MS). */
  idleExitMs?: number;
  /** How long a worker lives on after an edit's commit was handed to it (default WORKER_KEEP_WARM_AFTER_EDIT_MS). */
  keepWarmMs?: number;
};

export class GitWorker implements CommitEngine {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(r: never): void; reject(e: Error): void }>();
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** When an edit's commit was last handed over (performance.now()): the worker stays keepWarmMs after it. */
  private lastEditAt = -Infinity;
  /** Large commits being copied to the worker in slices (sliced()): not in `pending` yet, but they hold the worker too. */
  private handing = 0;
  /** When the current worker said its modules are loaded (performance.now()); undefined until then. */
  private readyAt: number | undefined;
  private readyWaiters: Array<{ resolve(): void; reject(e: Error): void }> = [];
  /** Workers ended for being idle: their exit fails nothing (calls made since went to a new one). */
  private readonly retired = new WeakSet<Worker>();
  /** Branch leases the worker holds (taken through this thread's Store), so close() can hand them back. */
  private readonly branchLeases = new Map<string, number>();
  readonly holder: string;

  constructor(private readonly opts: GitWorkerOptions) {
    // One holder id for the whole process, even across worker restarts, so a restarted worker
    // re-acquires (extends) its own branch leases instead of waiting for them to expire.
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  }

  commit(input: CommitInput, opts: CommitOptions = {}): Promise<CommitResult> {
    const id = this.nextId++;
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(new GitEngineError('Cancelled', 'the commit was cancelled before it started; its changes stay pending'));
    if (opts.edit) this.lastEditAt = performance.now();
    const onAbort = () => this.worker?.postMessage({ type: 'cancel', id } satisfies ToWorker);
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = this.sliced(id, input);
    void done.finally(() => signal?.removeEventListener('abort', onAbort)).catch(() => undefined);
    return done;
  }

  private sliced(id: number, input: CommitInput): Promise<CommitResult> {
    if (input.changes.length <= SLICE) return this.call({ type: 'commit', id, input });
    // A large commit (a snapshot) is copied to the worker in slices, each its own task on the
    // event loop: one structured clone of 10,000 objects held up the API for ~20 ms.
    // All slices and the commit go to one worker: one that died meanwhile fails the commit (retryable),
    // never lets a new worker commit part of the changes.
    return (async () => {
      if (this.closed) throw new GitEngineError('Cancelled', 'the git engine is shut down');
      const w = this.ensure();
      const gone = () => new GitEngineError('Unreachable', 'the git engine worker stopped while a commit was handed to it', true);
      // Until callOn registers the commit in `pending`, `handing` keeps the idle exit from retiring
      // the worker that holds its first slices.
      this.handing++;
      try {
        for (let i = 0; i < input.changes.length; i += SLICE) {
          if (this.worker !== w) throw gone();
          w.postMessage({ type: 'changes', id, changes: input.changes.slice(i, i + SLICE) } satisfies ToWorker);
          await new Promise((r) => setImmediate(r));
        }
        if (this.worker !== w) throw gone();
        return this.callOn<CommitResult>(w, { type: 'commit', id, input: { ...input, changes: [] } });
      } finally {
        this.handing--;
      }
    })();
  }

  listFolder(input: FolderInput): Promise<ObjectRef[]> {
    return this.call({ type: 'list', id: this.nextId++, input });
  }

  scan(input: ScanInput): Promise<ScanReport> {
    return this.call({ type: 'scan', id: this.nextId++, input });
  }

  private call<T>(msg: Extract<ToWorker, { type: 'commit' | 'list' | 'scan' }>): Promise<T> {
    if (this.closed) return Promise.reject(new GitEngineError('Cancelled', 'the git engine is shut down'));
    return this.callOn(this.ensure(), msg);
  }

  private callOn<T>(w: Worker, msg: Extract<ToWorker, { type: 'commit' | 'list' | 'scan' }>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.set(msg.id, { resolve: resolve as (r: never) => void, reject });
      this.idle(false);
      // Work in flight keeps the process alive; an idle worker does not.
      w.ref();
      w.postMessage(msg);
    });
  }

  /** Whether a worker thread is running now (an idle one ends after idleExitMs). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  warm(): void {
    // An idle worker does not keep the process alive (ensure() unrefs it), so this costs only memory.
    if (!this.closed) this.ensure();
  }

  /** Whether the current worker has loaded its modules and answers at once. */
  get ready(): boolean {
    return this.worker !== undefined && this.readyAt !== undefined;
  }

  /** Resolves when a worker has loaded its modules (starting one when none runs). */
  whenReady(): Promise<void> {
    if (this.closed) return Promise.reject(new GitEngineError('Cancelled', 'the git engine is shut down'));
    this.ensure();
    if (this.readyAt !== undefined) return Promise.resolve();
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  /**
   * Stops the worker at once, abandoning in-flight remote work: a push cut off is harmless (it is a
   * compare-and-swap; the window stays in the store and its next attempt finds it landed or not).
   * The branch leases the worker held are handed back, so the next process (or replica) does not
   * wait out their TTL.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.idle(false);
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
    this.failAll('the git engine is shut down', 'Cancelled');
    const lease = this.opts.lease;
    const held = [...this.branchLeases];
    this.branchLeases.clear();
    if (lease) await Promise.all(held.map(([name, token]) => lease.releaseLease(name, this.holder, token).catch(() => undefined)));
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const { lease, idleExitMs: _idle, ...rest } = this.opts;
    const data: WorkerEngineOptions = { ...rest, holder: this.holder, useLeases: lease !== undefined };
    // A small young generation whatever node's flags: a snapshot's burst of short-lived objects
    // otherwise grows the worker's semi-spaces to V8's default maximum (16 MiB each), and they stay
    // committed at rest (the main thread's are set by the image's --max-semi-space-size, Dockerfile;
    // `npm run bench -- peer`, docs/benchmarks.md "Side by side with the Go operator").
    const w = new Worker(new URL('./worker-thread.js', import.meta.url), { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
    w.on('message', (msg: FromWorker) => this.onMessage(w, msg));
    w.on('error', (e) => {
      if (this.worker === w) this.worker = undefined;
      if (!this.retired.has(w)) this.failAll(`the git engine worker failed: ${e.message}`);
    });
    w.on('exit', (code) => {
      if (this.worker === w) this.worker = undefined;
      if (!this.closed && !this.retired.has(w)) this.failAll(`the git engine worker exited (code ${code})`);
    });
    // An idle worker must not keep the process alive.
    w.unref();
    this.worker = w;
    this.readyAt = undefined;
    // The idle exit is armed once the worker is ready (onMessage): a start slower than idleExitMs
    // (a loaded machine) must not end the worker a change just warmed.
    return w;
  }

  /**
   * Arms (or disarms) the idle exit. The exit protocol, in the order its guarantees rest on:
   * 1. A worker is retired only from this timer, and only when nothing holds it: no call in
   *    `pending` (a commit, listing or scan handed over and not answered), no large commit being
   *    copied to it in slices (`handing`), no branch lease it holds (it renews them), and
   *    idleExitMs since it was ready or gave its last answer (keepWarmMs since the last edit's
   *    commit was handed over, when that is later).
   * 2. Retiring clears `this.worker` before terminate() is called, in the same synchronous step as
   *    the checks of 1: a call made after it starts a new worker (ensure()); a call made before it
   *    was in `pending` or `handing` and kept the worker. So no call is ever sent to a worker that
   *    is ending, and the exit of a retired worker fails nothing (`retired`).
   * 3. What the worker held is on disk (clones, `local:` repositories, the identity caches), so a
   *    new worker's first commit of a repository re-reads its folder index and commits the same.
   */
  private idle(now: boolean): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (!now || this.closed || !this.worker) return;
    const w = this.worker;
    const idleMs = this.opts.idleExitMs ?? WORKER_IDLE_EXIT_MS;
    const warmUntil = this.lastEditAt + (this.opts.keepWarmMs ?? WORKER_KEEP_WARM_AFTER_EDIT_MS);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.worker !== w || this.pending.size > 0 || this.handing > 0) return;
      if (this.branchLeases.size > 0 || performance.now() < warmUntil) return this.idle(true);
      this.worker = undefined;
      this.readyAt = undefined;
      this.retired.add(w);
      void w.terminate();
    }, Math.max(idleMs, warmUntil - performance.now()));
    this.idleTimer.unref();
  }

  /** Resolves whenReady()'s callers, or rejects them with `error` (the worker ended before it was ready). */
  private settleReady(error?: Error): void {
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const w of waiters) error ? w.reject(error) : w.resolve();
  }

  private failAll(message: string, reason: GitErrorReason = 'Unreachable'): void {
    this.settleReady(new GitEngineError(reason, message, reason === 'Unreachable'));
    for (const p of this.pending.values()) p.reject(new GitEngineError(reason, message, reason === 'Unreachable'));
    this.pending.clear();
  }

  private onMessage(w: Worker, msg: FromWorker): void {
    if (msg.type === 'ready') {
      if (this.worker !== w) return;
      this.readyAt = performance.now();
      this.settleReady();
      if (this.pending.size === 0 && this.handing === 0) this.idle(true);
      return;
    }
    if (msg.type === 'lease') {
      const lease = this.opts.lease;
      const call = lease ? (lease[msg.op] as (...a: unknown[]) => Promise<unknown>).apply(lease, msg.args) : Promise.reject(new Error('no lease store'));
      const name = msg.args[0] as string;
      if (msg.op === 'releaseLease') this.branchLeases.delete(name);
      if (msg.op === 'acquireLease')
        void call.then((got) => {
          const token = (got as { token?: number } | null)?.token;
          if (token !== undefined) this.branchLeases.set(name, token);
        }, () => undefined);
      call.then(
        (value) => w.postMessage({ type: 'lease-reply', id: msg.id, ok: true, value } satisfies ToWorker),
        (e: Error) => w.postMessage({ type: 'lease-reply', id: msg.id, ok: false, message: e?.message ?? String(e) } satisfies ToWorker),
      );
      return;
    }
    const p = this.pending.get(msg.id);
    this.pending.delete(msg.id);
    if (this.pending.size === 0) {
      w.unref();
      if (this.worker === w) this.idle(true);
    }
    if (!p) return;
    if (msg.ok) p.resolve((msg.type === 'listing' ? msg.refs : msg.type === 'scanned' ? msg.report : msg.result) as never);
    else p.reject(new GitEngineError(msg.reason === 'Internal' ? 'Unreachable' : (msg.reason as GitErrorReason), msg.message, msg.retryable));
  }
}
