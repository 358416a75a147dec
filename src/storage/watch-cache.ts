// In-memory state of the objects a process serves, shared by both backends: the embedded store
// keeps its whole state here, the Redis store keeps a cache fed by the Redis event log.
//
// Objects are immutable once stored: get/list/watch hand out the same instances to every caller
// (no per-request or per-watcher cloning, so fan-out to 1,000 watchers stays cheap). Callers must
// copy before modifying; `freeze: true` deep-freezes stored objects so tests catch violations.

import { objectMapKey, objectMapKeyRange } from './keys.js';
import {
  StorageError,
  eventLogRetentionOf,
  type KubeObject,
  type ListOptions,
  type ObjectKey,
  type StoreEvent,
  type WatchCallbacks,
  type WatchEventType,
  type WatchHandle,
} from './types.js';

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

interface Entry {
  cluster: string;
  namespace: string;
  obj: KubeObject;
}

interface Watcher {
  cluster?: string;
  namespace?: string;
  cb: WatchCallbacks;
  /** Events that arrived while the replay was still pending delivery. */
  pending: StoreEvent[] | null;
  lastSent: number;
  /** Highest RV delivered; guards against delivering an event twice. */
  sentRV: number;
  /** Highest RV told by a progress notification (nothing new to tell below it). */
  notifiedRV: number;
  stopped: boolean;
}

export function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o as object)) deepFreeze(v);
  }
  return o;
}

/**
 * A list served from the cache, current or (ListOptions.atRV) as it was at an RV, with the sort
 * key of every item; shared by both backends. `currentRV` is the store's RV the current state
 * reflects: a snapshot after it does not exist yet.
 */
export function listFromCache(rc: ResourceCache, opts: ListOptions, currentRV: number): { items: KubeObject[]; keys: string[] } {
  if (opts.atRV === undefined) return rc.listKeyed(opts.cluster, opts.namespace);
  if (opts.atRV > currentRV) throw new StorageError('Timeout', `Too large resource version: ${opts.atRV}, current: ${currentRV}`, currentRV);
  const listed = rc.listAt(opts.atRV, opts.cluster, opts.namespace);
  if (!listed) throw new StorageError('Expired', `too old resource version: ${opts.atRV} (${rc.oldestRV})`, rc.oldestRV);
  return listed;
}

/** State and history of one resource type. */
export class ResourceCache {
  private objects = new Map<string, Entry>();
  private sorted: string[] | null = null;
  private sortedItems: KubeObject[] | null = null;
  // History ring: events[start..] sorted by rv; compacted when `start` grows past retention.
  private events: StoreEvent[] = [];
  private start = 0;
  private watchers = new Set<Watcher>();
  /** Watchers with an onProgress callback (the served watches; in-process informers take none). */
  private progressWatchers = 0;
  /** Events with rv > oldestRV are retained; a watch from an older RV is Expired. */
  oldestRV: number;
  /** RV of the last event applied. */
  lastRV: number;
  /** Every event with rv <= syncedRV has been applied (maintained by the owner of the cache). */
  syncedRV: number;

  constructor(
    readonly id: string,
    baseRV: number,
    private readonly opts: { retention: number; freeze: boolean; onProgressWatchers?: (delta: number) => void },
  ) {
    this.oldestRV = baseRV;
    this.lastRV = baseRV;
    this.syncedRV = baseRV;
  }

  get size(): number {
    return this.objects.size;
  }
  get watcherCount(): number {
    return this.watchers.size;
  }
  /** Watchers that take progress notifications (bookmarks): the only reason to tick for this resource. */
  get progressWatcherCount(): number {
    return this.progressWatchers;
  }

  private removed(ws: Iterable<Watcher>): void {
    let n = 0;
    for (const w of ws) if (w.cb.onProgress) n++;
    if (n === 0) return;
    this.progressWatchers -= n;
    this.opts.onProgressWatchers?.(-n);
  }

  get(key: ObjectKey): KubeObject | undefined {
    return this.objects.get(objectMapKey(key))?.obj;
  }

  /** Sorted by (cluster, namespace, name); the returned array must not be modified. */
  list(cluster?: string, namespace?: string): KubeObject[] {
    return this.listKeyed(cluster, namespace).items;
  }

  /** list() with the map key of every item (same index); the arrays must not be modified. */
  listKeyed(cluster?: string, namespace?: string): { items: KubeObject[]; keys: string[] } {
    if (this.sorted === null) {
      this.sorted = [...this.objects.keys()].sort();
      this.sortedItems = this.sorted.map((k) => this.objects.get(k)!.obj);
    }
    const keys = this.sorted;
    const items = this.sortedItems!;
    if (cluster !== undefined) {
      // One contiguous key range (see keys.ts): binary search both ends.
      const lo = objectMapKeyRange(cluster, namespace || undefined);
      const a = lowerBound(keys, lo);
      const b = lowerBound(keys, lo.slice(0, -1) + '\u0001');
      return { items: items.slice(a, b), keys: keys.slice(a, b) };
    }
    if (!namespace) return { items, keys };
    const out: KubeObject[] = [];
    const outKeys: string[] = [];
    for (let i = 0; i < keys.length; i++) {
      if (this.objects.get(keys[i]!)!.namespace === namespace) {
        out.push(items[i]!);
        outKeys.push(keys[i]!);
      }
    }
    return { items: out, keys: outKeys };
  }

  /**
   * The list as it was at `rv` (for continue tokens: every page of a paginated list reads one
   * snapshot, as etcd-backed lists do). Undone from the current state with the retained history;
   * undefined when `rv` is older than the history (the caller answers 410 Expired).
   */
  listAt(rv: number, cluster?: string, namespace?: string): { items: KubeObject[]; keys: string[] } | undefined {
    if (rv < this.oldestRV) return undefined;
    const first = this.firstAfter(rv);
    if (first >= this.events.length) return this.listKeyed(cluster, namespace);
    // For every key written after rv, its state at rv: the prevObject of its first later event.
    const atRV = new Map<string, KubeObject | null>();
    for (let i = first; i < this.events.length; i++) {
      const ev = this.events[i]!;
      const ns = ev.object.metadata.namespace ?? '';
      if (cluster !== undefined && ev.cluster !== cluster) continue;
      if (namespace && ns !== namespace) continue;
      const k = objectMapKey({ cluster: ev.cluster, namespace: ns, name: ev.object.metadata.name ?? '' });
      if (!atRV.has(k)) atRV.set(k, ev.type === 'ADDED' ? null : ev.prevObject ?? null);
    }
    if (atRV.size === 0) return this.listKeyed(cluster, namespace);
    const merged: Array<[string, KubeObject]> = [];
    for (const [k, e] of this.objects) {
      if (cluster !== undefined && e.cluster !== cluster) continue;
      if (namespace && e.namespace !== namespace) continue;
      if (!atRV.has(k)) merged.push([k, e.obj]);
    }
    for (const [k, obj] of atRV) if (obj) merged.push([k, obj]);
    merged.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { items: merged.map(([, o]) => o), keys: merged.map(([k]) => k) };
  }

  /** Every object with its key, for snapshots and rebuilds. */
  *entries(): IterableIterator<[string, KubeObject]> {
    for (const [k, e] of this.objects) yield [k, e.obj];
  }

  /**
   * Apply one committed write and fan it out. `obj` is the object as stored (for DELETED: its last
   * state carrying the deletion RV). Events must arrive in RV order; older ones are ignored so
   * two feeds (live follow and catch-up reads) can overlap safely. Returns the event, or
   * undefined when it was a duplicate.
   */
  apply(type: WatchEventType, key: ObjectKey, obj: KubeObject, rv: number, prev?: KubeObject): StoreEvent | undefined {
    if (rv <= this.lastRV) return undefined;
    if (this.opts.freeze) deepFreeze(obj);
    const k = objectMapKey(key);
    const before = this.objects.get(k);
    const prevObject = prev ?? before?.obj;
    if (type === 'DELETED') {
      if (before) this.objects.delete(k);
    } else {
      this.objects.set(k, { cluster: key.cluster, namespace: key.namespace, obj });
    }
    // A MODIFIED of an existing key keeps the key order: patch the cached items in place.
    if (before && type !== 'DELETED' && this.sorted) {
      const i = lowerBound(this.sorted, k);
      this.sortedItems = this.sortedItems!.slice();
      this.sortedItems[i] = obj;
    } else {
      this.sorted = null;
      this.sortedItems = null;
    }
    this.lastRV = rv;
    if (rv > this.syncedRV) this.syncedRV = rv;
    const ev: StoreEvent = { type, rv, cluster: key.cluster, object: obj };
    if (type !== 'ADDED' && prevObject) ev.prevObject = prevObject;
    this.events.push(ev);
    if (this.events.length - this.start > this.opts.retention) {
      this.oldestRV = this.events[this.start]!.rv;
      this.events[this.start++] = undefined as unknown as StoreEvent;
      if (this.start >= this.opts.retention) {
        this.events = this.events.slice(this.start);
        this.start = 0;
      }
    }
    this.fanOut(ev, key.namespace);
    return ev;
  }

  private fanOut(ev: StoreEvent, namespace: string): void {
    if (this.watchers.size === 0) return;
    const now = Date.now();
    for (const w of this.watchers) {
      if (w.cluster !== undefined && w.cluster !== ev.cluster) continue;
      if (w.namespace && w.namespace !== namespace) continue;
      if (w.pending) {
        w.pending.push(ev);
        continue;
      }
      deliver(w, ev, now);
    }
  }

  /** Register a watcher; replays retained events with rv > fromRV, then follows live. */
  watch(opts: { cluster?: string; namespace?: string; fromRV: number }, cb: WatchCallbacks): WatchHandle {
    if (opts.fromRV < this.oldestRV) {
      throw new StorageError(
        'Expired',
        `too old resource version: ${opts.fromRV} (${this.oldestRV})`,
        this.oldestRV,
      );
    }
    const w: Watcher = {
      cluster: opts.cluster,
      namespace: opts.namespace || undefined,
      cb,
      pending: [],
      lastSent: Date.now(),
      sentRV: opts.fromRV,
      notifiedRV: opts.fromRV,
      stopped: false,
    };
    for (let i = this.firstAfter(opts.fromRV); i < this.events.length; i++) {
      const ev = this.events[i]!;
      if (w.cluster !== undefined && w.cluster !== ev.cluster) continue;
      if (w.namespace && w.namespace !== ev.object.metadata.namespace) continue;
      w.pending!.push(ev);
    }
    this.watchers.add(w);
    if (cb.onProgress) {
      this.progressWatchers++;
      this.opts.onProgressWatchers?.(1);
    }
    // Deliver the replay after the caller has its handle; live events queue behind it.
    queueMicrotask(() => {
      const queued = w.pending!;
      w.pending = null;
      const now = Date.now();
      for (const ev of queued) {
        if (w.stopped) return;
        deliver(w, ev, now);
      }
    });
    return {
      stop: () => {
        w.stopped = true;
        if (this.watchers.delete(w)) this.removed([w]);
      },
    };
  }

  private firstAfter(rv: number): number {
    let lo = this.start;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Notify watchers that got nothing for `intervalMs` that they are complete up to `rv`, once per
   * new `rv`: with nothing written, a tick only compares numbers (no call per watcher at rest).
   */
  progress(rv: number, intervalMs: number, now: number): void {
    for (const w of this.watchers) {
      if (w.pending || !w.cb.onProgress || now - w.lastSent < intervalMs || rv < w.sentRV || rv <= w.notifiedRV) continue;
      const r: { used: void | boolean } = { used: true };
      safe(() => (r.used = w.cb.onProgress!(rv)));
      if (r.used === false) continue;
      w.lastSent = now;
      w.notifiedRV = rv;
    }
  }

  /** End every watcher from the store's side (backend lost, or history gap: clients re-list). */
  closeWatchers(reason: StorageError): void {
    const ws = [...this.watchers];
    this.watchers.clear();
    this.removed(ws);
    for (const w of ws) {
      w.stopped = true;
      safe(() => w.cb.onClose?.(reason));
    }
  }

  /**
   * Replace the whole state: the initial load of a cache fed by a backend, or a full reload after
   * the history had a gap. Watchers are ended with Expired, because events between their position
   * and `rv` are unknown. `history` (oldest first, all <= rv) lets watches resume from `oldestRV`.
   */
  reset(objects: Iterable<[ObjectKey, KubeObject]>, rv: number, history: StoreEvent[] = [], oldestRV = rv): void {
    this.closeWatchers(new StorageError('Expired', 'event history was lost; re-list', rv));
    this.objects.clear();
    for (const [key, obj] of objects) {
      if (this.opts.freeze) deepFreeze(obj);
      this.objects.set(objectMapKey(key), { cluster: key.cluster, namespace: key.namespace, obj });
    }
    this.sorted = null;
    this.sortedItems = null;
    this.events = history.slice(-this.opts.retention);
    if (this.opts.freeze) this.events.forEach(deepFreeze);
    this.start = 0;
    this.oldestRV = history.length > this.events.length ? history[history.length - this.events.length - 1]!.rv : oldestRV;
    this.lastRV = rv;
    this.syncedRV = rv;
  }
}

function deliver(w: Watcher, ev: StoreEvent, now: number): void {
  if (w.stopped || ev.rv <= w.sentRV) return;
  w.sentRV = ev.rv;
  const r: { sent: void | boolean } = { sent: true };
  safe(() => (r.sent = w.cb.onEvent(ev)));
  // An event the watcher's own selector dropped told its client nothing: it stays due for progress.
  if (r.sent !== false) w.lastSent = now;
}

// A throwing watcher callback must not break fan-out to the others or the write path.
function safe(f: () => void): void {
  try {
    f();
  } catch (err) {
    queueMicrotask(() => {
      throw err;
    });
  }
}

function lowerBound(a: string[], x: string): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
