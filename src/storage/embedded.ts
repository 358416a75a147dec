// The embedded store: the whole state in memory (WatchCache), made durable under
// `<dataDir>/store/` by DurableLog (group-committed append-only log + snapshots). Single process:
// the CLI locks the data directory (data-dir-lock.ts).

import { DurableLog, type DurableLogOptions, type DurableStats, type LogRecord, type Warn } from './durable-log.js';
import { parseObjectMapKey, parseResourceId, resourceId } from './keys.js';
import { MemoryRecords, type AppliedBatch, type RecordsSnapshot } from './records.js';
import { heartbeatMembers, leaseAcquire, leaseAcquireForMember, leaseCheck, leaseRelease, leaseRenew, liveEpochOf, type LeaseState, type MemberState } from './lease.js';
import {
  StorageError,
  describeObject,
  type KubeObject,
  type Heartbeat,
  type HeartbeatResult,
  type Lease,
  type ListOptions,
  type ListResult,
  type ObjectKey,
  type RecordBatch,
  type RecordStats,
  type ResourceRef,
  type Store,
  type WatchCallbacks,
  type WatchHandle,
  type WatchOptions,
} from './types.js';
import { WatchCache, listFromCache, type ResourceCache } from './watch-cache.js';
import { JsonRows } from './sliced-json.js';
import { shareWithPrevious } from './shared-values.js';
import { join } from 'node:path';
import { runEvery } from '../periodic/shared-timer.js';

export interface EmbeddedStoreOptions {
  /** Persist under `<dataDir>/store/`; memory only when absent. */
  dataDir?: string;
  /** Watch history kept per resource (default 10,000 events). */
  eventLogRetention?: number;
  /** Log records between snapshots (default 10,000). */
  snapshotEvery?: number;
  /** Log bytes past which a snapshot is taken when the log is also larger than the last snapshot (default 16 MiB). */
  compactLogBytes?: number;
  /** Quiet time after which a log worth compacting becomes a snapshot (default 30 s; durable-log.ts). */
  idleCompactMs?: number;
  /** Bookmark interval for idle watchers (default 1000 ms). */
  progressIntervalMs?: number;
  /** Deep-freeze stored objects so accidental mutation throws (tests). */
  freezeObjects?: boolean;
  /** Where start-up warnings go (a dropped torn tail, a converted format-1 directory). */
  warn?: Warn;
}

interface Snapshot {
  rv: number;
  /** resource id -> [cluster, namespace, name, object][] */
  resources: Record<string, [string, string, string, KubeObject][]>;
  leases: Record<string, LeaseState>;
  /** Live expiring records (absent in directories written before records existed). */
  records?: RecordsSnapshot;
}

/** How often expired records are dropped from memory (reads ignore them regardless). */
const RECORD_SWEEP_MS = 5000;

export async function createEmbeddedStore(opts: EmbeddedStoreOptions = {}): Promise<Store & { durableBatches(): number; durableStats(): DurableStats | undefined; durableSettled(): Promise<void> }> {
  const store = new EmbeddedStore(opts);
  if (opts.dataDir) {
    await store.open(join(opts.dataDir, 'store'), { snapshotEvery: opts.snapshotEvery, compactBytes: opts.compactLogBytes, idleCompactMs: opts.idleCompactMs, warn: opts.warn });
  }
  return store;
}

/** One object of a snapshot: [cluster, namespace, name, object] (Snapshot.resources). */
function snapshotRow([k, obj]: [string, KubeObject]): [string, string, string, KubeObject] {
  const { cluster, namespace, name } = parseObjectMapKey(k);
  return [cluster, namespace, name, obj];
}

export function withRV(obj: KubeObject, rv: number): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

export function storedRV(obj: KubeObject): number {
  return Number(obj.metadata.resourceVersion);
}

class EmbeddedStore implements Store {
  readonly kind = 'embedded';
  private rv = 0;
  /** RV at load: every event after it is in the history. */
  private baseRV = 0;
  private readonly cache: WatchCache;
  private readonly leases = new Map<string, LeaseState>();
  /**
   * Live replicas (heartbeat): until when, their epoch. Not persisted, a restart starts with none:
   * one process owns the data directory (data-dir-lock.ts), so after a restart no earlier member is
   * alive, and its membership leases are free. Epochs start from the clock so they never repeat.
   */
  private readonly members = new Map<string, MemberState>();
  private lastEpoch = Date.now();
  private readonly memberListeners = new Set<(by: string) => void>();
  private readonly records = new MemoryRecords();
  private readonly stopSweeper: () => void;
  private log: DurableLog | undefined;
  private closed = false;
  /** Every write up to this RV is on disk (writes are logged in RV order, so one number says it). */
  private durableRV = 0;
  private durableWaiters: Array<{ rv: number; resolve(): void; reject(e: Error): void }> = [];

  constructor(opts: EmbeddedStoreOptions) {
    this.cache = new WatchCache({
      retention: opts.eventLogRetention,
      progressIntervalMs: opts.progressIntervalMs,
      freeze: opts.freezeObjects,
      progressRV: () => this.rv,
    });
    // On the shared timer: a 60 s job's wake-up (a followed file's poll) is one of its own.
    this.stopSweeper = runEvery(RECORD_SWEEP_MS, () => this.records.sweep());
  }

  async open(dir: string, opts: DurableLogOptions): Promise<void> {
    const warn = opts.warn ?? (() => {});
    const { log, loaded } = await DurableLog.open<Snapshot>(dir, () => this.capture(), opts);
    this.log = log;
    const snap = loaded.snapshot;
    if (snap) {
      this.rv = this.baseRV = this.durableRV = snap.rv;
      for (const [id, objs] of Object.entries(snap.resources)) {
        this.cache.resource(id, snap.rv).reset(
          objs.map(([cluster, namespace, name, obj]) => [{ cluster, namespace, name }, shareWithPrevious(obj, undefined)]),
          snap.rv,
        );
      }
      for (const [name, l] of Object.entries(snap.leases)) this.leases.set(name, l);
      this.records.restore(snap.records);
    }
    loaded.records.forEach((rec, i) => this.replay(rec, log, loaded.offsets[i]!));
    this.durableRV = this.rv;
    if (loaded.convertedFrom === 1) {
      await log.compact();
      warn('embedded store: converted a data directory written by an earlier version (format 1) to format 2', { dir });
    }
  }

  private replay(rec: LogRecord, log: DurableLog, offset: number): void {
    if (rec.op === 'lease') {
      this.leases.set(rec.name as string, rec.l as LeaseState);
      return;
    }
    if (rec.op === 'rec') {
      // Expired ones are skipped by apply: a restart after the TTL brings nothing back.
      this.records.apply(rec.b as AppliedBatch);
      return;
    }
    const parsed = rec.o as KubeObject;
    const rv = storedRV(parsed);
    // Every object write takes the next resourceVersion, so replayed ones are consecutive.
    if (rv !== this.rv + 1) {
      throw log.damaged(offset, `the record (sequence ${rec.s}) sets resourceVersion ${parsed?.metadata?.resourceVersion} where ${this.rv + 1} was expected`);
    }
    const [cluster, namespace, name] = rec.k as [string, string, string];
    const key = { cluster, namespace, name };
    const rc = this.rc(parseResourceId(rec.r as string));
    rc.apply(rec.t as 'ADDED', key, shareWithPrevious(parsed, rc.get(key)), rv);
    if (rv > this.rv) this.rv = rv;
  }

  /**
   * The state to snapshot, captured now in one cheap step: references to the stored objects (never
   * mutated: a write stores a new object, withRV), shaped into rows only as the snapshot is
   * serialized, in slices (durable-log.ts).
   */
  private capture(): unknown {
    const resources: Record<string, JsonRows<[string, KubeObject]>> = {};
    for (const rc of this.cache.all()) resources[rc.id] = new JsonRows(Array.from(rc.entries()), snapshotRow);
    return { rv: this.rv, resources, leases: Object.fromEntries(this.leases), records: this.records.capture() };
  }

  private rc(res: ResourceRef): ResourceCache {
    return this.cache.resource(resourceId(res), this.baseRV);
  }

  private writable(): void {
    if (this.closed) throw new StorageError('Unavailable', 'store is closed');
    const bad = this.log?.unhealthy;
    if (bad) throw new StorageError('Unavailable', bad);
  }

  private persist(rec: Omit<LogRecord, 's'>): Promise<void> {
    return this.log ? this.log.append(rec) : Promise.resolve();
  }

  async get(res: ResourceRef, key: ObjectKey): Promise<KubeObject | undefined> {
    return this.rc(res).get(key);
  }

  async list(res: ResourceRef, opts: ListOptions = {}): Promise<ListResult> {
    return { ...listFromCache(this.rc(res), opts, this.rv), resourceVersion: opts.atRV ?? this.rv };
  }

  async create(res: ResourceRef, key: ObjectKey, obj: KubeObject): Promise<KubeObject> {
    this.writable();
    const rc = this.rc(res);
    if (rc.get(key)) throw new StorageError('AlreadyExists', `${describeObject(res, key)} already exists`);
    return this.write(res, rc, 'ADDED', key, obj);
  }

  async update(res: ResourceRef, key: ObjectKey, obj: KubeObject, expectedRV: number): Promise<KubeObject> {
    this.writable();
    const rc = this.rc(res);
    this.precondition(res, rc, key, expectedRV);
    return this.write(res, rc, 'MODIFIED', key, obj);
  }

  async delete(res: ResourceRef, key: ObjectKey, expectedRV?: number): Promise<KubeObject> {
    this.writable();
    const rc = this.rc(res);
    const cur = this.precondition(res, rc, key, expectedRV);
    return this.write(res, rc, 'DELETED', key, cur);
  }

  private precondition(res: ResourceRef, rc: ResourceCache, key: ObjectKey, expectedRV?: number): KubeObject {
    const cur = rc.get(key);
    if (!cur) throw new StorageError('NotFound', `${describeObject(res, key)} not found`);
    const curRV = storedRV(cur);
    if (expectedRV !== undefined && curRV !== expectedRV) {
      throw new StorageError('Conflict', `${describeObject(res, key)} has resourceVersion ${curRV}, not ${expectedRV}`, curRV);
    }
    return cur;
  }

  private async write(res: ResourceRef, rc: ResourceCache, type: 'ADDED' | 'MODIFIED' | 'DELETED', key: ObjectKey, obj: KubeObject): Promise<KubeObject> {
    // Applied to memory synchronously (so the next compare-and-swap sees it), acknowledged only
    // once the log line is on disk.
    const rv = ++this.rv;
    // The registry builds each version as a copy of the one before it (src/registry/registry.ts):
    // sharing what the write left unchanged keeps the history's versions small. Bounded, as this
    // step holds the event loop: a larger object keeps the rest of its copy.
    const stored = type === 'DELETED' ? withRV(obj, rv) : shareWithPrevious(withRV(obj, rv), rc.get(key));
    rc.apply(type, key, stored, rv);
    try {
      await this.persist({ op: type === 'DELETED' ? 'del' : 'put', r: resourceId(res), k: [key.cluster, key.namespace, key.name], t: type, o: stored });
    } catch (e) {
      for (const w of this.durableWaiters.splice(0)) w.reject(e as Error);
      throw e;
    }
    this.markDurable(rv);
    return stored;
  }

  private markDurable(rv: number): void {
    if (rv <= this.durableRV) return;
    this.durableRV = rv;
    if (this.durableWaiters.length === 0) return;
    const still: typeof this.durableWaiters = [];
    for (const w of this.durableWaiters) (w.rv <= rv ? w.resolve() : still.push(w));
    this.durableWaiters = still;
  }

  waitDurable(rv: number): Promise<void> {
    if (!this.log || rv <= this.durableRV) return Promise.resolve();
    if (this.closed) return Promise.reject(new StorageError('Unavailable', 'store is closed'));
    const bad = this.log.unhealthy;
    if (bad) return Promise.reject(new StorageError('Unavailable', bad));
    return new Promise((resolve, reject) => this.durableWaiters.push({ rv, resolve, reject }));
  }

  async watch(res: ResourceRef, opts: WatchOptions, cb: WatchCallbacks): Promise<WatchHandle> {
    if (this.closed) throw new StorageError('Unavailable', 'store is closed');
    return this.rc(res).watch(opts, cb);
  }

  async currentRV(): Promise<number> {
    return this.rv;
  }

  oldestRetainedRV(res: ResourceRef): number {
    return this.rc(res).oldestRV;
  }

  private liveEpoch(now: number) {
    return liveEpochOf(this.members, now);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    this.writable();
    const now = Date.now();
    const next = leaseAcquire(this.leases.get(name), holder, ttlMs, now, this.liveEpoch(now));
    if (!next) return null;
    await this.setLease(name, next);
    return { name, holder: next.holder, token: next.token, expiresAt: next.expiresAt };
  }

  async acquireMemberLease(name: string, holder: string, epoch: number): Promise<Lease | null> {
    this.writable();
    const now = Date.now();
    const cur = this.leases.get(name);
    const next = leaseAcquireForMember(cur, holder, epoch, now, this.liveEpoch(now));
    if (!next) return null;
    // Re-acquiring a lease already ours writes nothing.
    if (!cur || cur.holder !== next.holder || cur.token !== next.token || cur.epoch !== next.epoch) await this.setLease(name, next);
    return { name, holder, token: next.token, expiresAt: 0 };
  }

  async renewLease(name: string, holder: string, token: number, ttlMs: number): Promise<boolean> {
    this.writable();
    const now = Date.now();
    const cur = this.leases.get(name);
    const next = leaseRenew(cur, holder, token, ttlMs, now, this.liveEpoch(now));
    if (!next) return false;
    if (next !== cur) await this.setLease(name, next);
    return true;
  }

  async checkLease(name: string, token: number): Promise<boolean> {
    const now = Date.now();
    return leaseCheck(this.leases.get(name), token, now, this.liveEpoch(now));
  }

  async releaseLease(name: string, holder: string, token: number): Promise<void> {
    this.writable();
    const next = leaseRelease(this.leases.get(name), holder, token);
    if (next) await this.setLease(name, next);
  }

  async heartbeat(hb: Heartbeat): Promise<HeartbeatResult> {
    this.writable();
    // In memory only (see `members`): the leases that hang on a membership are not touched.
    const r = heartbeatMembers(this.members, hb, Date.now(), () => (this.lastEpoch = Math.max(this.lastEpoch + 1, Date.now())));
    // Told after this heartbeat's answer, as the Redis store's followers hear it (member log).
    if (r.changed) for (const fn of this.memberListeners) setImmediate(fn, hb.member);
    return { members: r.members, epoch: r.epoch };
  }

  onMembersChanged(listener: (by: string) => void): () => void {
    this.memberListeners.add(listener);
    return () => this.memberListeners.delete(listener);
  }

  private setLease(name: string, l: LeaseState): Promise<void> {
    this.leases.set(name, l);
    return this.persist({ op: 'lease', name, l });
  }

  async putRecords(space: string, batch: RecordBatch): Promise<void> {
    this.writable();
    const b = this.records.prepare(space, batch);
    // Applied to memory before the append, like objects: a snapshot taken while the line is queued
    // must include it. A failed append makes the whole store unavailable, and the caller answers
    // 500, so the sender retries the batch.
    this.records.apply(b);
    await this.persist({ op: 'rec', b });
  }

  async getRecords(space: string, keys: string[]): Promise<(string | undefined)[]> {
    return this.records.get(space, keys);
  }

  async recordStats(space: string): Promise<RecordStats> {
    return this.records.stats(space);
  }

  unhealthyReason(): string | undefined {
    return this.closed ? 'store is closed' : this.log?.unhealthy;
  }

  /** Batches the durable log has written (group commit: one write and one fdatasync each); a diagnostic. */
  durableBatches(): number {
    return this.log?.batchesWritten ?? 0;
  }

  durableStats(): DurableStats | undefined {
    return this.log?.stats;
  }

  /** Resolves once no log batch or snapshot is in progress (snapshots run in the background). */
  async durableSettled(): Promise<void> {
    await this.log?.settle();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopSweeper();
    for (const w of this.durableWaiters.splice(0)) w.reject(new StorageError('Unavailable', 'store is closed'));
    this.cache.stop();
    this.cache.closeAll(new StorageError('Unavailable', 'store is closed'));
    await this.log?.close();
  }
}

