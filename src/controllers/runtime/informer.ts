// An informer over our own Store: list, then watch from the list's resourceVersion, keeping a
// local cache and telling handlers what changed. A watch the store ends (backend lost) or one that
// is too old (Expired, the 410 of the HTTP API) is replaced by a fresh list that is diffed against
// the cache, so handlers see every change exactly as "the latest state of a key", Kubernetes
// informer style. Events are delivered only once they are durable (Store.waitDurable): a
// controller must never act on a write a crash could still take back.
import type { KubeObject, ListResult, ObjectKey, ResourceRef, Store, StoreEvent, WatchHandle } from '../../storage/types.js';
import { DEFAULT_CLUSTER, type StorageError } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';

/** What an informer reads. Today the Store; the registry's controller API once it offers list+watch. */
export type InformerSource = Pick<Store, 'list' | 'watch'> & { waitDurable?(rv: number): Promise<void> };

export interface InformerHandler {
  /** `old` is undefined for an object the cache did not hold. */
  upsert?(obj: KubeObject, old: KubeObject | undefined): void;
  delete?(obj: KubeObject): void;
}

export interface InformerOptions {
  /** Logical cluster; undefined = every cluster. */
  cluster?: string;
  namespace?: string;
  log?: Logger;
  /** First delay before re-listing after a failure (doubles up to maxRelistDelayMs). */
  relistDelayMs?: number;
  maxRelistDelayMs?: number;
}

/** `cluster/namespace/name`: the cache key of an object (and the work-queue key controllers use). */
export function keyOf(obj: { metadata: { name?: string; namespace?: string; [k: string]: unknown } }, cluster: string): string {
  return `${cluster}/${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`;
}

export function parseKey(key: string): ObjectKey {
  const [cluster, namespace, ...rest] = key.split('/');
  return { cluster, namespace, name: rest.join('/') };
}

/** The logical cluster of a stored object: `kcp.io/cluster` outside the default cluster (the registry stamps it). */
export function clusterOf(obj: KubeObject, fallback = DEFAULT_CLUSTER): string {
  const c = obj.metadata.annotations?.['kcp.io/cluster'];
  return typeof c === 'string' && c ? c : fallback;
}

export class Informer {
  private readonly cache = new Map<string, KubeObject>();
  private readonly handlers: InformerHandler[] = [];
  private handle: WatchHandle | undefined;
  private stopped = false;
  private synced = false;
  private generation = 0;
  private chain: Promise<void> = Promise.resolve();
  private relistTimer: NodeJS.Timeout | undefined;
  private delay: number;
  private syncedWaiters: Array<() => void> = [];

  constructor(
    private readonly source: InformerSource,
    readonly res: ResourceRef,
    private readonly opts: InformerOptions = {},
  ) {
    this.delay = opts.relistDelayMs ?? 200;
  }

  on(handler: InformerHandler): void {
    this.handlers.push(handler);
  }

  /** Starts listing and watching; resolves after the first complete list was delivered. */
  start(): Promise<void> {
    void this.relist();
    return this.waitSynced();
  }

  waitSynced(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((r) => this.syncedWaiters.push(r));
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  get(key: string): KubeObject | undefined {
    return this.cache.get(key);
  }

  list(): KubeObject[] {
    return [...this.cache.values()];
  }

  keys(): string[] {
    return [...this.cache.keys()];
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    clearTimeout(this.relistTimer);
    this.handle?.stop();
    this.handle = undefined;
    for (const w of this.syncedWaiters.splice(0)) w();
  }

  private scheduleRelist(reason: string): void {
    if (this.stopped) return;
    this.generation++;
    this.handle?.stop();
    this.handle = undefined;
    clearTimeout(this.relistTimer);
    this.opts.log?.debug('informer re-listing', { resource: this.res.resource, reason, delayMs: this.delay });
    this.relistTimer = setTimeout(() => void this.relist(), this.delay);
    this.relistTimer.unref?.();
    this.delay = Math.min(this.delay * 2, this.opts.maxRelistDelayMs ?? 5_000);
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    const gen = ++this.generation;
    let listed: ListResult;
    try {
      listed = await this.source.list(this.res, { cluster: this.opts.cluster, namespace: this.opts.namespace });
      if (this.source.waitDurable) await this.source.waitDurable(listed.resourceVersion);
    } catch (e) {
      if (gen === this.generation) this.scheduleRelist(`list failed: ${(e as Error).message}`);
      return;
    }
    if (gen !== this.generation || this.stopped) return;
    // Diff the fresh list against the cache: what changed or appeared, then what disappeared.
    const seen = new Set<string>();
    for (const obj of listed.items) {
      const key = keyOf(obj, clusterOf(obj, this.opts.cluster));
      seen.add(key);
      const old = this.cache.get(key);
      if (old?.metadata.resourceVersion === obj.metadata.resourceVersion) continue;
      this.cache.set(key, obj);
      this.emit((h) => h.upsert?.(obj, old));
    }
    for (const [key, old] of [...this.cache]) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      this.emit((h) => h.delete?.(old));
    }
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncedWaiters.splice(0)) w();
    }
    try {
      const handle = await this.source.watch(
        this.res,
        { cluster: this.opts.cluster, namespace: this.opts.namespace, fromRV: listed.resourceVersion },
        {
          onEvent: (ev) => {
            if (gen !== this.generation) return;
            // Keep the store's order while waiting for each event to become durable.
            this.chain = this.chain.then(() => this.deliver(ev, gen));
          },
          onClose: (reason: StorageError) => {
            if (gen === this.generation) this.scheduleRelist(`watch closed: ${reason.message}`);
          },
        },
      );
      if (gen !== this.generation) {
        handle.stop();
        return;
      }
      this.handle = handle;
      this.delay = this.opts.relistDelayMs ?? 200;
    } catch (e) {
      // Expired (410) or the backend is gone: start over with a fresh list.
      if (gen === this.generation) this.scheduleRelist(`watch failed: ${(e as Error).message}`);
    }
  }

  private async deliver(ev: StoreEvent, gen: number): Promise<void> {
    try {
      if (this.source.waitDurable) await this.source.waitDurable(ev.rv);
    } catch (e) {
      if (gen === this.generation) this.scheduleRelist(`event not durable: ${(e as Error).message}`);
      return;
    }
    if (gen !== this.generation || this.stopped) return;
    const key = keyOf(ev.object, ev.cluster);
    if (ev.type === 'DELETED') {
      const old = this.cache.get(key);
      this.cache.delete(key);
      if (old) this.emit((h) => h.delete?.(ev.object));
      return;
    }
    const old = this.cache.get(key);
    this.cache.set(key, ev.object);
    this.emit((h) => h.upsert?.(ev.object, old));
  }

  private emit(fn: (h: InformerHandler) => void): void {
    for (const h of this.handlers) {
      try {
        fn(h);
      } catch (e) {
        this.opts.log?.error('informer handler threw', { resource: this.res.resource, error: (e as Error).message });
      }
    }
  }
}
