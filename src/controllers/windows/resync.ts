// The windows controller's safety net: pending changes that no reconcile will ever look at. A
// change is durable once its window record is written (sink.ts), and every record write comes back
// as an informer event that queues its GitTarget (controller.ts); a reconcile that finds nothing to
// do from a stale copy relies on the next event. If that event is ever lost, the change waits for
// the next edit of the same GitTarget, which may never come (one edit of 1,000 at 10,000 tenants,
// bench/scale). So, as a Kubernetes controller's periodic resync would, the records are looked at
// again, in one batch over the store's own cache (no Redis round trip, no per-object timer):
// a record with work whose version has not moved for a whole interval while its GitTarget has no
// reconcile queued, running or timed is reconciled, and logged loudly, since it means a wake-up was
// lost somewhere. Nothing is scanned while no record has work and neither a record event nor a
// change recorded by this replica's mirror came since the last scan, so a server at rest pays nothing.
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject, Store } from '../../storage/types.js';
import { clusterOf, keyOf } from '../runtime/index.js';
import { WINDOWS_RESOURCE, hasWork, type WindowRecord } from './record.js';

/** How often records with work are looked at (a lost wake-up is repaired within two of these). */
export const RESYNC_INTERVAL_MS = 10_000;

export interface PendingResyncDeps {
  store: Pick<Store, 'list'>;
  log: Logger;
  /** Whether the key has a reconcile queued, running or timed (runtime/queue.ts WorkQueue.has). */
  scheduled(key: string): boolean;
  /** Whether this replica reconciles the key at all (its GitTarget exists, is not suspended, is ours). */
  ours(key: string, rec: WindowRecord): boolean;
  reconcile(key: string): void;
  intervalMs?: number;
}

export class PendingResync {
  private timer: NodeJS.Timeout | undefined;
  /** Records with work seen unscheduled by the last scan: key → the resourceVersion seen. */
  private suspects = new Map<string, string>();
  /** A record event arrived since the last scan (or the last scan found work): scan again. */
  private dirty = true;
  private scanning = false;
  private stopped = false;
  /** Records repaired so far (tests, logs). */
  repaired = 0;

  constructor(private readonly deps: PendingResyncDeps) {}

  /** A window record changed (the windows informer's upsert) or changes are being recorded (the sink): the next scan has something to look at. */
  noteActivity(): void {
    this.dirty = true;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.scan();
    }, this.deps.intervalMs ?? RESYNC_INTERVAL_MS);
    this.timer.unref();
  }

  /** One pass over every record in the store's cache; re-arms itself while any record has work. */
  async scan(): Promise<void> {
    if (this.scanning || this.stopped || !this.dirty) return;
    this.scanning = true;
    this.dirty = false;
    let withWork = 0;
    try {
      const { items } = await this.deps.store.list(WINDOWS_RESOURCE, { consistency: 'any' });
      const next = new Map<string, string>();
      for (const o of items as KubeObject[]) {
        const rec = o as WindowRecord;
        if (!Array.isArray(rec.windows) || !hasWork(rec)) continue;
        withWork++;
        const key = keyOf(rec, clusterOf(rec));
        if (this.deps.scheduled(key) || !this.deps.ours(key, rec)) continue;
        const rv = rec.metadata.resourceVersion ?? '';
        // Seen unscheduled at the same version one interval ago: no event or timer is coming for it.
        if (this.suspects.get(key) === rv) {
          this.repaired++;
          this.deps.log.warn('windows: pending changes had no reconcile scheduled; reconciling them now (a wake-up was lost)', { gitTarget: key, resourceVersion: rv });
          this.deps.reconcile(key);
        } else next.set(key, rv);
      }
      this.suspects = next;
    } catch (e) {
      this.deps.log.debug('windows resync scan failed; trying again', { error: (e as Error).message });
      withWork = 1;
    } finally {
      this.scanning = false;
    }
    if (withWork > 0) this.dirty = true;
    if (this.dirty) this.arm();
  }
}
