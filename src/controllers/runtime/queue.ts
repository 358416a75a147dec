// A keyed work queue in the style of client-go's: a key waiting to be processed is queued once no
// matter how often it is added; a key is processed by one worker at a time, and one added while it
// is being processed runs again afterwards; a failure retries with per-key exponential backoff.
import type { Logger } from '../../metrics/logger.js';

export interface QueueResult {
  /** Process the key again after this long (a timer the controller needs, e.g. an idle window). */
  requeueAfterMs?: number;
}

export interface WorkQueueOptions {
  name: string;
  concurrency?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  log?: Logger;
}

export class WorkQueue {
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private running = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly process: (key: string) => Promise<QueueResult | void>,
    private readonly opts: WorkQueueOptions,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    const t = this.timers.get(key);
    if (t) {
      clearTimeout(t.timer);
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
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const cur = this.timers.get(key);
    if (cur && cur.at <= at) return;
    if (cur) clearTimeout(cur.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref?.();
    this.timers.set(key, { at, timer });
  }

  get length(): number {
    return this.ready.length;
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  drained(): Promise<void> {
    if (this.ready.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
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
    if (this.running === 0 && this.ready.length === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async run(key: string): Promise<void> {
    let retryAfter: number | undefined;
    try {
      const r = await this.process(key);
      this.failures.delete(key);
      retryAfter = r?.requeueAfterMs;
    } catch (e) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      retryAfter = Math.min((this.opts.baseDelayMs ?? 100) * 2 ** (n - 1), this.opts.maxDelayMs ?? 30_000);
      this.opts.log?.warn(`${this.opts.name}: reconcile failed, retrying`, { key, attempt: n, retryInMs: retryAfter, error: (e as Error).message });
    } finally {
      this.active.delete(key);
      this.running--;
    }
    if (this.dirty.delete(key)) this.add(key);
    else if (retryAfter !== undefined) this.addAfter(key, retryAfter);
    this.pump();
  }
}
