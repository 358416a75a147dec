// State and history of one resource type, shared by both backends (watch-cache.ts holds one per
// resource): the objects by key, their sorted order for lists, the ring of recent events for
// watches and for lists at an older RV, and the resource's watchers (watchers.ts), which every
// applied event is fanned out to.
//
// Objects are immutable once stored: get/list/watch hand out the same instances to every caller
// (no per-request or per-watcher cloning, so fan-out to 1,000 watchers stays cheap). Callers must
// copy before modifying; `freeze: true` deep-freezes stored objects so tests catch violations.
import { objectMapKey, objectMapKeyRange } from './keys.js';
import {
  StorageError,
  type KubeObject,
  type ListOptions,
  type ObjectKey,
  type StoreEvent,
  type WatchCallbacks,
  type WatchEventType,
  type WatchHandle,
} from './types.js';
import { Watchers } from './watchers.js';

interface Entry {
  cluster: string;
  namespace: string;
  obj: KubeObject;
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
  /** A list returned `sorted`/`sortedItems` themselves: the next write copies them before changing them. */
  private handedOut = false;
  // History ring: events[start..] sorted by rv; compacted when `start` grows past retention.
  private events: StoreEvent[] = [];
  private start = 0;
  private readonly watchers: Watchers;
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
    this.watchers = new Watchers(opts.onProgressWatchers);
  }

  get size(): number {
    return this.objects.size;
  }
  get watcherCount(): number {
    return this.watchers.size;
  }
  /** Watchers looked at by the fan-out of every event so far (watchers.ts; tests count the work per write). */
  get watchersExamined(): number {
    return this.watchers.examined;
  }
  /** Watchers the progress ticks have looked at, over the cache's life (watchers.ts; counted for tests). */
  get progressVisits(): number {
    return this.watchers.progressVisits;
  }

  /** Watchers that take progress notifications (bookmarks): the only reason to tick for this resource. */
  get progressWatcherCount(): number {
    return this.watchers.progressCount;
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
      this.handedOut = false;
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
    if (!namespace) {
      this.handedOut = true;
      return { items, keys };
    }
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
    // Keep the sorted order current rather than re-sorting every key at the next list: a create
    // followed by a list (a quota check, an informer's re-list) cost a full sort, ~5 ms at 10,000
    // keys and ~18 ms at 30,000 (test/unit/resource-cache-sorted.test.ts). An in-place splice is a
    // few microseconds; the arrays are copied first only when a list handed them out whole
    // (copying 20,000 entries on every write costs ~0.3 ms).
    if (this.sorted) {
      if (this.handedOut) {
        this.sorted = this.sorted.slice();
        this.sortedItems = this.sortedItems!.slice();
        this.handedOut = false;
      }
      const keys = this.sorted;
      const items = this.sortedItems!;
      const i = lowerBound(keys, k);
      const present = keys[i] === k;
      if (type === 'DELETED') {
        if (present) {
          keys.splice(i, 1);
          items.splice(i, 1);
        }
      } else if (present) items[i] = obj;
      else {
        keys.splice(i, 0, k);
        items.splice(i, 0, obj);
      }
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
    this.watchers.fanOut(ev, key.namespace);
    return ev;
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
    return this.watchers.add(opts, this.eventsAfter(opts.fromRV), cb);
  }

  /** The retained events with rv > `rv`, in RV order. */
  private *eventsAfter(rv: number): IterableIterator<StoreEvent> {
    for (let i = this.firstAfter(rv); i < this.events.length; i++) yield this.events[i]!;
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

  /** Notify watchers that got nothing for `intervalMs` that they are complete up to `rv` (watchers.ts). */
  progress(rv: number, intervalMs: number, now: number): void {
    this.watchers.progress(rv, intervalMs, now);
  }

  /** End every watcher from the store's side (backend lost, or history gap: clients re-list). */
  closeWatchers(reason: StorageError): void {
    this.watchers.closeAll(reason);
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
