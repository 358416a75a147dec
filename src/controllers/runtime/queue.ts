// A keyed work queue in the style of client-go's: a key waiting to be processed is queued once no
// matter how often it is added; a key is processed by one worker at a time, and one added while it
// is being processed runs again afterwards; a failure retries with per-key exponential backoff.
// With `holdBackoff`, a key's backoff holds against every add() — the controller's own status and
// record writes come back as events and would otherwise retry a failing key at once, over and over —
// and only reset() (a user's spec change, a deletion) ends it early. Failures are logged once per
// state change (a new error, then the recovery), not once per attempt.
// A run that goes on to wait for other work (a commit in the git engine) can leave its concurrency
// slot (detach()): the key stays in progress, so it still runs once at a time, but the keys queued
// behind it do not wait for that work too (controllers/windows/controller.ts).
import type { Logger } from '../../metrics/logger.js';
import { realClock, type Clock, type ClockTimer } from './clock.js';

/** Given to each run: detach() stops counting it against `concurrency` (once; the key stays in progress). */
export interface RunSlot {
  detach(): void;
}

export interface QueueResult {
  /** Process the key again after this long (a timer the controller needs, e.g. an idle window). */
  requeueAfterMs?: number;
}

export interface WorkQueueOptions {
  name: string;
  concurrency?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** The wait before retrying a key whose processing threw for the `failures`-th time in a row (default: base·2^(n-1), capped). */
  backoff?(error: unknown, failures: number): number;
  /** A key waiting out a failure's backoff is not processed earlier by add(); only reset() ends the wait. */
  holdBackoff?: boolean;
  log?: Logger;
  /** Requeue and backoff timers (default: the wall clock). */
  clock?: Clock;
}

export class WorkQueue {
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: ClockTimer; backoff?: boolean }>();
  private readonly failures = new Map<string, number>();
  /** The error last logged per failing key: a failure is logged when it differs. */
  private readonly lastError = new Map<string, string>();
  /** Keys reset() while being processed: their next run comes right after, whatever the outcome. */
  private readonly resetWhileActive = new Set<string>();
  private running = 0;
  /** Runs that left their slot (detach) and have not finished. */
  private detached = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  private readonly clock: Clock;

  constructor(
    private readonly process: (key: string, slot: RunSlot) => Promise<QueueResult | void>,
    private readonly opts: WorkQueueOptions,
  ) {
    this.clock = opts.clock ?? realClock;
  }

  add(key: string): void {
    if (this.stopped) return;
    const t = this.timers.get(key);
    if (t?.backoff && this.opts.holdBackoff) return;
    if (t) {
      t.timer.cancel();
      this.timers.delete(key);
    }
    if (this.active.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.ready.push(key);
    this.pump();
  }

  /** Adds the key after `ms`; an earlier pending timer for the key wins over a later one. */
  addAfter(key: string, ms: number): void {
    this.schedule(key, ms, false);
  }

  /** Ends the key's failure backoff and processes it now: something a user changed may fix it. */
  reset(key: string): void {
    if (this.stopped) return;
    this.failures.delete(key);
    const t = this.timers.get(key);
    if (t) {
      t.timer.cancel();
      this.timers.delete(key);
    }
    if (this.active.has(key)) this.resetWhileActive.add(key);
    this.add(key);
  }

  private schedule(key: string, ms: number, backoff: boolean): void {
    if (this.stopped) return;
    if (ms <= 0 && !backoff) return this.add(key);
    const at = this.clock.now() + ms;
    const cur = this.timers.get(key);
    // A held backoff is not shortened by a requeue timer.
    if (cur && (cur.at <= at || (cur.backoff && this.opts.holdBackoff))) return;
    if (cur) cur.timer.cancel();
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    this.timers.set(key, { at, timer, backoff });
  }

  /** Whether `key` is queued, being processed, or has a requeue or backoff timer. */
  has(key: string): boolean {
    return this.queued.has(key) || this.active.has(key) || this.timers.has(key);
  }

  get length(): number {
    return this.ready.length;
  }

  /** Runs in progress that left their slot (tests). */
  get detachedRuns(): number {
    return this.detached;
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  drained(): Promise<void> {
    if (this.ready.length === 0 && this.running === 0 && this.detached === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) t.timer.cancel();
    this.timers.clear();
    this.lastError.clear();
    this.ready.length = 0;
    this.queued.clear();
    await this.drained();
  }

  private pump(): void {
    const limit = this.opts.concurrency ?? 1;
    while (!this.stopped && this.running < limit && this.ready.length > 0) {
      const key = this.ready.shift()!;
      this.queued.delete(key);
      this.active.add(key);
      this.running++;
      void this.run(key);
    }
    if (this.running === 0 && this.detached === 0 && this.ready.length === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async run(key: string): Promise<void> {
    let retryAfter: number | undefined;
    let failed = false;
    let detached = false;
    const slot: RunSlot = {
      detach: () => {
        if (detached) return;
        detached = true;
        this.running--;
        this.detached++;
        this.pump();
      },
    };
    try {
      const r = await this.process(key, slot);
      const n = this.failures.get(key);
      this.failures.delete(key);
      if (this.lastError.delete(key)) this.opts.log?.info(`${this.opts.name}: reconcile succeeded again`, { key, failedAttempts: n });
      retryAfter = r?.requeueAfterMs;
    } catch (e) {
      failed = true;
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      retryAfter = this.opts.backoff ? this.opts.backoff(e, n) : Math.min((this.opts.baseDelayMs ?? 100) * 2 ** (n - 1), this.opts.maxDelayMs ?? 30_000);
      const error = (e as Error)?.message ?? String(e);
      if (this.lastError.get(key) !== error) {
        this.lastError.set(key, error);
        const reason = (e as { reason?: unknown })?.reason;
        this.opts.log?.warn(`${this.opts.name}: reconcile failed, retrying`, { key, attempt: n, retryInMs: Math.round(retryAfter), ...(typeof reason === 'string' ? { reason } : {}), error });
      }
    } finally {
      this.active.delete(key);
      if (detached) this.detached--;
      else this.running--;
    }
    const reset = this.resetWhileActive.delete(key);
    // Events that came while a failing key was processed are (with holdBackoff) its own writes:
    // they wait for the backoff like everything else.
    const dirty = this.dirty.delete(key) && !(failed && this.opts.holdBackoff);
    if (reset || dirty) this.add(key);
    else if (retryAfter !== undefined) this.schedule(key, retryAfter, failed);
    this.pump();
  }
}
