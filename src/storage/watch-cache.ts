// In-memory state of the objects a process serves, shared by both backends: the embedded store
// keeps its whole state here, the Redis store keeps a cache fed by the Redis event log. One
// ResourceCache per resource type (resource-cache.ts: objects, lists, history; watchers.ts: its
// watchers), and the progress (bookmark) ticker over all of them.

import { ResourceCache } from './resource-cache.js';
import { type StorageError, eventLogRetentionOf } from './types.js';

export { ResourceCache, listFromCache } from './resource-cache.js';

export const DEFAULT_EVENT_LOG_RETENTION = 10_000;

export interface WatchCacheOptions {
  /** Events of history kept per resource. */
  retention?: number;
  /** Watchers that received nothing for this long get onProgress (BOOKMARK). 0 disables. */
  progressIntervalMs?: number;
  /** Deep-freeze stored objects (tests). */
  freeze?: boolean;
  /** The RV up to which a resource is known complete, for progress notifications. */
  progressRV?: (rc: ResourceCache) => number;
  /**
   * Told true when the first watcher that takes progress notifications registers, false when the
   * last one is gone: the owner's own progress work (the Redis follower's counter read) runs only
   * while someone listens.
   */
  onProgressDemand?: (listening: boolean) => void;
}

/** All resource caches of one process, plus the progress (bookmark) ticker. */
export class WatchCache {
  readonly retention: number;
  private readonly resources = new Map<string, ResourceCache>();
  private timer: NodeJS.Timeout | undefined;
  private readonly freeze: boolean;
  private readonly interval: number;
  /** Watchers taking progress notifications, over every resource. */
  private listening = 0;
  private stopped = false;

  constructor(private readonly opts: WatchCacheOptions = {}) {
    this.retention = opts.retention ?? DEFAULT_EVENT_LOG_RETENTION;
    if (!(this.retention >= 1)) throw new Error('event log retention must be at least 1');
    this.freeze = opts.freeze ?? false;
    this.interval = opts.progressIntervalMs ?? 1000;
  }

  /**
   * The progress ticker runs only while a watcher takes progress notifications: an idle server
   * whose only watchers are its own controllers' informers wakes for nothing (every wake-up of an
   * idle process is CPU at rest: docs/architecture.md, "At rest and at start-up").
   */
  private demand(delta: number): void {
    const before = this.listening;
    this.listening += delta;
    if (before === 0 && this.listening > 0 && !this.stopped) {
      if (this.interval > 0) {
        this.timer = setInterval(() => this.tick(this.interval), this.interval);
        this.timer.unref();
      }
      this.opts.onProgressDemand?.(true);
    } else if (before > 0 && this.listening === 0) {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
      this.opts.onProgressDemand?.(false);
    }
  }

  has(id: string): boolean {
    return this.resources.has(id);
  }

  /** Events of history kept for resource `id` (shorter for internal records). */
  retentionOf(id: string): number {
    return eventLogRetentionOf(id, this.retention);
  }

  /** The cache of resource `id`, created empty at `baseRV` when new. */
  resource(id: string, baseRV = 0): ResourceCache {
    let rc = this.resources.get(id);
    if (!rc) {
      rc = new ResourceCache(id, baseRV, { retention: this.retentionOf(id), freeze: this.freeze, onProgressWatchers: (d) => this.demand(d) });
      this.resources.set(id, rc);
    }
    return rc;
  }

  all(): IterableIterator<ResourceCache> {
    return this.resources.values();
  }

  private tick(interval: number): void {
    const now = Date.now();
    for (const rc of this.resources.values()) {
      if (rc.progressWatcherCount === 0) continue;
      rc.progress(this.opts.progressRV ? this.opts.progressRV(rc) : rc.syncedRV, interval, now);
    }
  }

  closeAll(reason: StorageError): void {
    for (const rc of this.resources.values()) rc.closeWatchers(reason);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
