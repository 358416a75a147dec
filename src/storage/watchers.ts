// The watchers of one resource (resource-cache.ts): registration with a replay of retained
// history, fan-out of each applied event, progress notifications (BOOKMARKs) and closing from the
// store's side. Events reach a watcher once each, in RV order, replay first.
// Watchers are indexed by the (cluster, namespace) they select, so an event looks only at the
// watchers that can take it: with one watch per tenant namespace (each GitTarget's mirror watches its
// own namespace), a loop over every watcher made each write cost O(tenants) (bench/scale).
import type { StorageError, StoreEvent, WatchCallbacks, WatchHandle } from './types.js';

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
  /** Not asked for progress before this time (epoch ms): its onProgress said when it would use it. */
  askAt: number;
  stopped: boolean;
}

/** Watchers of one selection: cluster (undefined: every cluster), then namespace ('': every namespace). */
type Scopes = Map<string | undefined, Map<string, Set<Watcher>>>;

export class Watchers {
  private readonly watchers = new Set<Watcher>();
  private readonly scopes: Scopes = new Map();
  /** Watchers fanOut has looked at, over its life: the per-event work, counted for tests. */
  examined = 0;
  /** Watchers with an onProgress callback (the served watches; in-process informers take none). */
  private progressWatchers = 0;
  /**
   * What progress() may skip without looking at a watcher (its gate), as the last visit of every
   * watcher left them: the earliest time one with something to tell is due (`dueAt`); the RV up
   * to which the others have nothing to be told (`quietUpToRV`), and the earliest time one of
   * them is due once the RV moves past it (`dueOnceMoved`). Only lowered between visits (a new
   * watcher); an event delivered since only makes them conservative. At rest, once every watch
   * was told the current RV, a tick costs three comparisons instead of one visit per watch (10,000
   * a second at 10,000 tenants, bench/scale).
   */
  private dueAt = Infinity;
  private quietUpToRV = Infinity;
  private dueOnceMoved = Infinity;
  /** Watchers progress() has looked at, over its life: the per-tick work, counted for tests. */
  progressVisits = 0;

  constructor(private readonly onProgressWatchers?: (delta: number) => void) {}

  get size(): number {
    return this.watchers.size;
  }

  get progressCount(): number {
    return this.progressWatchers;
  }

  private removed(ws: Iterable<Watcher>): void {
    let n = 0;
    for (const w of ws) if (w.cb.onProgress) n++;
    if (n === 0) return;
    this.progressWatchers -= n;
    this.onProgressWatchers?.(-n);
  }

  fanOut(ev: StoreEvent, namespace: string): void {
    if (this.watchers.size === 0) return;
    const now = Date.now();
    for (const cluster of [ev.cluster, undefined]) {
      const byNamespace = this.scopes.get(cluster);
      if (!byNamespace) continue;
      this.fanOutTo(byNamespace.get(''), ev, now);
      if (namespace) this.fanOutTo(byNamespace.get(namespace), ev, now);
    }
  }

  private fanOutTo(ws: Set<Watcher> | undefined, ev: StoreEvent, now: number): void {
    if (!ws) return;
    for (const w of ws) {
      this.examined++;
      if (w.pending) {
        w.pending.push(ev);
        continue;
      }
      deliver(w, ev, now);
    }
  }

  private scope(w: Watcher): Set<Watcher> {
    let byNamespace = this.scopes.get(w.cluster);
    if (!byNamespace) this.scopes.set(w.cluster, (byNamespace = new Map()));
    const ns = w.namespace ?? '';
    let ws = byNamespace.get(ns);
    if (!ws) byNamespace.set(ns, (ws = new Set()));
    return ws;
  }

  private unindex(w: Watcher): void {
    const byNamespace = this.scopes.get(w.cluster);
    const ns = w.namespace ?? '';
    const ws = byNamespace?.get(ns);
    if (!ws?.delete(w) || ws.size > 0) return;
    byNamespace!.delete(ns);
    if (byNamespace!.size === 0) this.scopes.delete(w.cluster);
  }

  /** Register a watcher; replays those of `retained` (rv > fromRV, in RV order) it selects, then follows live. */
  add(opts: { cluster?: string; namespace?: string; fromRV: number }, retained: Iterable<StoreEvent>, cb: WatchCallbacks): WatchHandle {
    const w: Watcher = {
      cluster: opts.cluster,
      namespace: opts.namespace || undefined,
      cb,
      pending: [],
      lastSent: Date.now(),
      sentRV: opts.fromRV,
      notifiedRV: opts.fromRV,
      askAt: 0,
      stopped: false,
    };
    for (const ev of retained) {
      if (w.cluster !== undefined && w.cluster !== ev.cluster) continue;
      if (w.namespace && w.namespace !== ev.object.metadata.namespace) continue;
      w.pending!.push(ev);
    }
    this.watchers.add(w);
    this.scope(w).add(w);
    if (cb.onProgress) {
      this.progressWatchers++;
      this.onProgressWatchers?.(1);
      // Told nothing yet past fromRV, and possibly due once it has been quiet for an interval.
      this.quietUpToRV = Math.min(this.quietUpToRV, opts.fromRV);
      this.dueOnceMoved = Math.min(this.dueOnceMoved, w.lastSent);
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
        this.unindex(w);
        if (this.watchers.delete(w)) this.removed([w]);
      },
    };
  }

  /**
   * Notify watchers that got nothing for `intervalMs` that they are complete up to `rv`, once per
   * new `rv`: with nothing written, a tick only compares numbers (no call per watcher at rest).
   */
  progress(rv: number, intervalMs: number, now: number): void {
    if (now < this.dueAt && (rv <= this.quietUpToRV || now < this.dueOnceMoved)) return;
    let dueAt = Infinity;
    let quietUpToRV = Infinity;
    let dueOnceMoved = Infinity;
    for (const w of this.watchers) {
      if (!w.cb.onProgress) continue;
      this.progressVisits++;
      this.progressOne(w, rv, intervalMs, now);
      // A watcher whose replay is still pending is looked at again on the next tick.
      const due = w.pending ? now : Math.max(w.askAt, w.lastSent + intervalMs);
      // Nothing to tell it while the RV is at most this (the skip rule of progressOne).
      const quiet = Math.max(w.notifiedRV, w.sentRV - 1);
      if (!w.pending && rv <= quiet) {
        quietUpToRV = Math.min(quietUpToRV, quiet);
        dueOnceMoved = Math.min(dueOnceMoved, due);
      } else dueAt = Math.min(dueAt, due);
    }
    this.dueAt = dueAt;
    this.quietUpToRV = quietUpToRV;
    this.dueOnceMoved = dueOnceMoved;
  }

  private progressOne(w: Watcher, rv: number, intervalMs: number, now: number): void {
    if (w.pending || now < w.askAt || now - w.lastSent < intervalMs || rv < w.sentRV || rv <= w.notifiedRV) return;
    const r: { used: void | boolean | number } = { used: true };
    safe(() => (r.used = w.cb.onProgress!(rv)));
    if (r.used === false) return;
    // Not used yet, and not wanted for this long: every watcher asked every second was O(watches)
    // calls a second while anything was written (10,000 at 10,000 tenants, bench/scale).
    if (typeof r.used === 'number') {
      w.askAt = now + r.used;
      return;
    }
    w.lastSent = now;
    w.notifiedRV = rv;
  }

  /** End every watcher from the store's side (backend lost, or history gap: clients re-list). */
  closeAll(reason: StorageError): void {
    const ws = [...this.watchers];
    this.watchers.clear();
    this.scopes.clear();
    this.removed(ws);
    for (const w of ws) {
      w.stopped = true;
      safe(() => w.cb.onClose?.(reason));
    }
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
