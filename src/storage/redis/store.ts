// The Redis store. Writes are one Lua script each (write.lua); reads are served from a per-process
// WatchCache fed by the resources' event logs (Redis Streams), made consistent by reading the RV
// counter first ("consistent reads from cache"). Design and failure handling: docs/storage.md.

import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { RedisKeys, objectField, parseObjectField, resourceId } from '../keys.js';
import {
  StorageError,
  describeObject,
  type Heartbeat,
  type HeartbeatResult,
  type KubeObject,
  type Lease,
  type ListOptions,
  type ListResult,
  type ObjectKey,
  type RecordBatch,
  type RecordStats,
  type ResourceRef,
  type Store,
  type StoreEvent,
  type WatchCallbacks,
  type WatchHandle,
  type WatchOptions,
} from '../types.js';
import { WatchCache, listFromCache, type ResourceCache } from '../watch-cache.js';
import { decodeEntry, encodeForWrite } from './codec.js';
import { heartbeatScript, leaseScript, recordsScript, writeScript, type Script } from './scripts.js';
import { RedisHealth } from './health.js';

export interface RedisStoreOptions {
  url?: string;
  /** Redis Cluster startup nodes (`host:port`); every key then lives in one slot (docs/storage.md). */
  clusterNodes?: string[];
  keyPrefix: string;
  /** Extra ioredis options (TLS, Sentinel `sentinels`/`name`, password, ...). */
  redisOptions?: Record<string, unknown>;
  eventLogRetention?: number;
  progressIntervalMs?: number;
  freezeObjects?: boolean;
  /** A command that gets no answer fails with Unavailable after this long (default 3000 ms). */
  commandTimeoutMs?: number;
  /** How long createRedisStore waits for the first connection (default 5000 ms). */
  connectWaitMs?: number;
  /**
   * Replicas that must have a write before it is acknowledged (Redis WAIT, within half the command
   * timeout); 0 = acknowledge once the primary has it. Replication is asynchronous otherwise: a
   * write acknowledged just before the primary dies can be missing on the promoted replica.
   */
  waitReplicas?: number;
  /** Where the loss and the recovery of the Redis connection are reported (once each, at warn). */
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
}

const BLOCK_MS = 5000;
type Raw = [string, string[]];

interface ResState {
  res: ResourceRef;
  logKey: string;
  rc: ResourceCache;
  /** RV of the last event-log entry applied (the follower resumes after it). */
  lastLogRV: number;
  inflight?: Promise<void>;
  queued?: Promise<void>;
  reloading?: Promise<void>;
}

export async function createRedisStore(opts: RedisStoreOptions): Promise<Store> {
  const s = new RedisStore(opts);
  await s.start(opts.connectWaitMs ?? 5000);
  return s;
}

class RedisStore implements Store {
  readonly kind = 'redis';
  private readonly keys: RedisKeys;
  private readonly cmd: Redis | Cluster;
  private readonly sub: Redis | Cluster;
  private readonly cache: WatchCache;
  private readonly states = new Map<string, Promise<ResState>>();
  private readonly byLog = new Map<string, ResState>();
  private subId: number | undefined;
  private blocked = false;
  private wake: (() => void) | undefined;
  private lastError: string | undefined;
  private followerError: string | undefined;
  private maxRV = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly health: RedisHealth;

  constructor(private readonly opts: RedisStoreOptions) {
    const timeout = opts.commandTimeoutMs ?? 3000;
    // Fail fast instead of queueing or retrying: a request must get its 503 within seconds, and a
    // write must never be re-sent after a reconnect (it may already have been applied).
    const base: RedisOptions = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: timeout,
      connectTimeout: 2000,
      retryStrategy: (times: number) => Math.min(50 * times, 1000),
      ...(opts.redisOptions as RedisOptions),
    };
    const subOpts = { ...base, commandTimeout: BLOCK_MS + timeout };
    if (opts.clusterNodes?.length) {
      this.keys = new RedisKeys(opts.keyPrefix, true);
      const nodes = opts.clusterNodes.map((n) => ({ host: n.slice(0, n.lastIndexOf(':')), port: Number(n.slice(n.lastIndexOf(':') + 1)) }));
      this.cmd = new Cluster(nodes, { enableOfflineQueue: false, redisOptions: base });
      this.sub = new Cluster(nodes, { enableOfflineQueue: false, redisOptions: subOpts });
    } else {
      this.keys = new RedisKeys(opts.keyPrefix);
      this.cmd = opts.url ? new Redis(opts.url, base) : new Redis(base);
      this.sub = opts.url ? new Redis(opts.url, subOpts) : new Redis(subOpts);
    }
    for (const c of [this.cmd, this.sub]) c.on('error', (err: Error) => (this.lastError = err.message));
    this.health = new RedisHealth(timeout, opts.log, () => !this.closed && this.cmd.status === 'ready', () => this.lastError);
    this.cmd.on('error', (err: Error) => !this.closed && this.health.lost(err.message));
    this.cmd.on('close', () => !this.closed && this.health.lost(this.lastError ?? 'connection closed'));
    this.cmd.on('ready', () => this.health.recovered());
    this.sub.on('ready', () => {
      if (this.sub instanceof Redis) this.sub.client('ID').then((id) => (this.subId = Number(id)), () => {});
    });
    this.cache = new WatchCache({
      retention: opts.eventLogRetention,
      progressIntervalMs: opts.progressIntervalMs,
      freeze: opts.freezeObjects,
    });
    // Idle resources with watchers are synced periodically so bookmarks carry the latest RV.
    this.timer = setInterval(() => void this.progress(), opts.progressIntervalMs || 1000);
    this.timer.unref();
  }

  async start(waitMs: number): Promise<void> {
    const ready = (c: Redis | Cluster) => new Promise<void>((r) => (c.status === 'ready' ? r() : c.once('ready', () => r())));
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([ready(this.cmd), ready(this.sub)]), new Promise((r) => (t = setTimeout(r, waitMs)))]);
    clearTimeout(t);
    void this.follow();
  }

  // ---- the cache: load, follow, catch up ----------------------------------------------------

  private state(res: ResourceRef): Promise<ResState> {
    const id = resourceId(res);
    let p = this.states.get(id);
    if (!p) {
      p = this.init(res).catch((err) => {
        this.states.delete(id);
        throw this.unavailable(err);
      });
      this.states.set(id, p);
    }
    return p;
  }

  private async init(res: ResourceRef): Promise<ResState> {
    const st: ResState = { res, logKey: this.keys.log(res), rc: this.cache.resource(resourceId(res)), lastLogRV: 0 };
    await this.reload(st);
    this.byLog.set(st.logKey, st);
    // The follower is blocked on the old stream set: interrupt it so it includes this log.
    if (this.blocked && this.subId !== undefined) (this.cmd as Redis).client('UNBLOCK', this.subId).catch(() => {});
    this.wake?.();
    return st;
  }

  /** Atomically read every object, the counter and the retained log of `st.res`; replace the cache. */
  private reload(st: ResState): Promise<void> {
    st.reloading ??= (async () => {
      try {
        const res = st.res;
        for (;;) {
          const members = await this.cmd.smembers(this.keys.clusters(res));
          const m = this.cmd.multi().get(this.keys.rv()).smembers(this.keys.clusters(res));
          for (const c of members) m.hgetall(this.keys.objects(c, res));
          m.xrevrange(st.logKey, '+', '-', 'COUNT', this.cache.retentionOf(resourceId(res)));
          const out = checked(await m.exec());
          const again = out[1] as string[];
          // A cluster that got its first object in between: read again with it.
          if (again.length !== members.length || again.some((c) => !members.includes(c))) continue;
          const rv = Number(out[0] ?? 0);
          const objects: [ObjectKey, KubeObject][] = [];
          const byField = new Map<string, KubeObject>();
          members.forEach((c, i) => {
            for (const [f, json] of Object.entries(out[2 + i] as Record<string, string>)) {
              const obj = JSON.parse(json) as KubeObject;
              objects.push([parseObjectField(c, f), obj]);
              byField.set(`${c}\u0000${f}`, obj);
            }
          });
          const entries = (out[2 + members.length] as Raw[]).map(decodeEntry).reverse();
          // History and current objects share instances where they are the same state, so a fresh
          // process does not hold two parsed copies of every recently written object.
          const lastByField = new Map<string, KubeObject>();
          const history: StoreEvent[] = entries.map((e) => {
            const k = `${e.cluster}\u0000${e.field}`;
            const cur = byField.get(k);
            const object = cur && cur.metadata.resourceVersion === String(e.rv) ? cur : (JSON.parse(e.json) as KubeObject);
            const ev: StoreEvent = { type: e.type, rv: e.rv, cluster: e.cluster, object };
            if (e.prevJson && e.type !== 'ADDED') ev.prevObject = lastByField.get(k) ?? JSON.parse(e.prevJson);
            lastByField.set(k, object);
            return ev;
          });
          st.rc.reset(objects, rv, history, entries[0]?.prevLog ?? 0);
          st.lastLogRV = entries.at(-1)?.rv ?? 0;
          this.seen(rv);
          return;
        }
      } finally {
        st.reloading = undefined;
      }
    })();
    return st.reloading;
  }

  /** Apply log entries in order. A broken `prevLog` chain means entries were trimmed unseen. */
  private apply(st: ResState, raw: Raw[]): void {
    for (const r of raw) {
      const e = decodeEntry(r);
      if (e.rv <= st.lastLogRV) continue;
      if (e.prevLog !== st.lastLogRV) {
        void this.reload(st).catch(() => {});
        return;
      }
      st.rc.apply(e.type, parseObjectField(e.cluster, e.field), JSON.parse(e.json), e.rv);
      st.lastLogRV = e.rv;
      this.seen(e.rv);
    }
  }

  /**
   * Catch the cache of `st` up with every write acknowledged before this call: read the counter,
   * then the log after our position, in one pipelined round trip. Concurrent callers share one
   * request; a caller arriving while one is in flight waits for the next (which starts after it).
   */
  private sync(st: ResState): Promise<void> {
    if (!st.inflight) return this.startSync(st);
    st.queued ??= st.inflight.then(noop, noop).then(() => {
      st.queued = undefined;
      return this.startSync(st);
    });
    return st.queued;
  }

  private startSync(st: ResState): Promise<void> {
    const p: Promise<void> = this.doSync(st).finally(() => {
      if (st.inflight === p) st.inflight = undefined;
    });
    st.inflight = p;
    return p;
  }

  private async doSync(st: ResState): Promise<void> {
    if (st.reloading) await st.reloading;
    // Only RVs seen before the GET was sent can prove the counter went back: a write acknowledged
    // while this pipeline is in flight may carry a higher RV than the GET saw.
    const known = this.maxRV;
    const out = checked(await this.cmd.pipeline().get(this.keys.rv()).xrange(st.logKey, `(${st.lastLogRV}-0`, '+').exec());
    const rv = Number(out[0] ?? 0);
    if (rv < known) {
      // The counter went back: Redis lost data (restarted without persistence). Start over.
      this.maxRV = rv;
      for (const s of this.byLog.values()) await this.reload(s);
      return;
    }
    this.apply(st, out[1] as Raw[]);
    if (st.reloading) await st.reloading;
    if (rv > st.rc.syncedRV) st.rc.syncedRV = rv;
    this.seen(rv);
  }

  /**
   * The periodic catch-up of watched resources (bookmarks carry the latest RV). At rest nothing was
   * written anywhere: one GET of the counter shows it, and no log is read (it was a GET and an
   * XRANGE per watched resource every tick). When the counter moved, or went back (Redis lost
   * data: doSync reloads), every watched resource syncs as before.
   */
  private async progress(): Promise<void> {
    if (this.unhealthyReason()) return;
    const watched = [...this.byLog.values()].filter((st) => st.rc.watcherCount > 0);
    if (watched.length === 0) return;
    const rv = Number((await this.cmd.get(this.keys.rv()).catch(() => undefined)) ?? NaN);
    if (rv === this.maxRV && watched.every((st) => st.rc.syncedRV >= rv && !st.reloading && !st.inflight)) return;
    for (const st of watched) this.sync(st).catch(() => {});
  }

  /** One blocking XREAD over every loaded log, on its own connection. */
  private async follow(): Promise<void> {
    let backoff = 50;
    while (!this.closed) {
      const sts = [...this.byLog.values()];
      if (sts.length === 0) {
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
        continue;
      }
      try {
        this.blocked = true;
        const block = this.sub instanceof Cluster ? 500 : BLOCK_MS; // no CLIENT UNBLOCK on Cluster
        const r = (await this.sub.xread('COUNT', 1000, 'BLOCK', block, 'STREAMS', ...sts.map((s) => s.logKey), ...sts.map((s) => `${s.lastLogRV}-0`))) as [string, Raw[]][] | null;
        this.blocked = false;
        if (this.followerError) await this.recovered();
        for (const [k, entries] of r ?? []) {
          const st = this.byLog.get(k);
          if (st && !st.reloading) this.apply(st, entries);
        }
        backoff = 50;
      } catch (err) {
        this.blocked = false;
        if (this.closed) return;
        if (!this.followerError) {
          this.followerError = this.health.describe(err as Error);
          // Watches end cleanly; clients re-list (and get 503 until Redis is back).
          this.cache.closeAll(new StorageError('Unavailable', this.followerError));
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 250);
      }
    }
  }

  private async recovered(): Promise<void> {
    const known = this.maxRV;
    const rv = Number((await this.cmd.get(this.keys.rv())) ?? 0);
    if (rv < known) {
      this.maxRV = rv;
      for (const s of this.byLog.values()) await this.reload(s);
    }
    this.followerError = undefined;
  }

  /**
   * Run a Lua script. With `waitReplicas`, a call that changed data (`changed`) and reached fewer
   * replicas than asked fails: it is applied on the primary but may not survive a failover, so it
   * is not acknowledged (the caller sees Unavailable, an ambiguous outcome like a timeout).
   */
  private async script(s: Script, keys: string[], args: (string | number)[], changed: (r: unknown) => boolean): Promise<unknown> {
    const want = this.opts.waitReplicas ?? 0;
    if (want <= 0) return s.run(this.cmd, keys, args);
    const ms = Math.floor((this.opts.commandTimeoutMs ?? 3000) / 2);
    const [r, got] = await s.runAndWait(this.cmd, keys, args, want, ms);
    if (got < want && changed(r)) {
      throw new StorageError('Unavailable', `redis: the write reached ${got} of ${want} replicas within ${ms} ms; it may or may not be kept`);
    }
    return r;
  }

  private seen(rv: number): void {
    if (rv > this.maxRV) this.maxRV = rv;
  }

  private unavailable(err: unknown): StorageError {
    return this.health.unavailable(err);
  }

  private bounded<T>(op: () => Promise<T>): Promise<T> {
    return this.health.bounded(op);
  }

  // ---- Store ------------------------------------------------------------------------------

  get(res: ResourceRef, key: ObjectKey, opts?: { consistency?: 'consistent' | 'any' }): Promise<KubeObject | undefined> {
    return this.bounded(() => this.getNow(res, key, opts));
  }

  private async getNow(res: ResourceRef, key: ObjectKey, opts?: { consistency?: 'consistent' | 'any' }): Promise<KubeObject | undefined> {
    const st = await this.state(res);
    if (opts?.consistency !== 'any') await this.sync(st).catch((e) => Promise.reject(this.unavailable(e)));
    return st.rc.get(key);
  }

  list(res: ResourceRef, opts: ListOptions = {}): Promise<ListResult> {
    return this.bounded(() => this.listNow(res, opts));
  }

  private async listNow(res: ResourceRef, opts: ListOptions): Promise<ListResult> {
    const st = await this.state(res);
    if (opts.consistency !== 'any') await this.sync(st).catch((e) => Promise.reject(this.unavailable(e)));
    return { ...listFromCache(st.rc, opts, st.rc.syncedRV), resourceVersion: opts.atRV ?? st.rc.syncedRV };
  }

  create(res: ResourceRef, key: ObjectKey, obj: KubeObject): Promise<KubeObject> {
    return this.write(res, key, 'create', obj);
  }

  update(res: ResourceRef, key: ObjectKey, obj: KubeObject, expectedRV: number): Promise<KubeObject> {
    return this.write(res, key, 'update', obj, expectedRV);
  }

  delete(res: ResourceRef, key: ObjectKey, expectedRV?: number): Promise<KubeObject> {
    return this.write(res, key, 'delete', undefined, expectedRV);
  }

  private write(res: ResourceRef, key: ObjectKey, op: string, obj?: KubeObject, expectedRV?: number): Promise<KubeObject> {
    return this.bounded(() => this.writeNow(res, key, op, obj, expectedRV));
  }

  private async writeNow(res: ResourceRef, key: ObjectKey, op: string, obj?: KubeObject, expectedRV?: number): Promise<KubeObject> {
    if (this.closed) throw new StorageError('Unavailable', 'store is closed');
    const [head, tail] = obj ? encodeForWrite(obj) : ['', ''];
    const keys = [this.keys.rv(), this.keys.objects(key.cluster, res), this.keys.log(res), this.keys.clusters(res)];
    let r: [string, (string | number)?, string?];
    try {
      r = (await this.script(writeScript, keys, [op, objectField(key), expectedRV ?? '', key.cluster, head, tail, this.cache.retentionOf(resourceId(res))], (x) => (x as string[])[0] === 'ok')) as typeof r;
    } catch (err) {
      throw this.unavailable(err);
    }
    const what = describeObject(res, key);
    if (r[0] === 'exists') throw new StorageError('AlreadyExists', `${what} already exists`);
    if (r[0] === 'notfound') throw new StorageError('NotFound', `${what} not found`);
    if (r[0] === 'conflict') {
      throw new StorageError('Conflict', `${what} has resourceVersion ${r[1]}, not ${expectedRV}`, Number(r[1]));
    }
    const rv = Number(r[1]);
    this.seen(rv);
    return JSON.parse(op === 'delete' ? r[2]! : head + rv + tail);
  }

  async watch(res: ResourceRef, opts: WatchOptions, cb: WatchCallbacks): Promise<WatchHandle> {
    const bad = this.unhealthyReason();
    if (bad) throw new StorageError('Unavailable', bad);
    const st = await this.state(res);
    if (st.reloading) await st.reloading;
    return st.rc.watch(opts, cb);
  }

  async currentRV(): Promise<number> {
    try {
      const rv = Number((await this.cmd.get(this.keys.rv())) ?? 0);
      this.seen(rv);
      return rv;
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  /** Known once the resource is in this process's cache; 0 before (a watch loads it first). */
  oldestRetainedRV(res: ResourceRef): number {
    const id = resourceId(res);
    return this.cache.has(id) ? this.cache.resource(id).oldestRV : 0;
  }

  private async lease(op: string, name: string, holder: string, token: number, ttlMs: number): Promise<[number, number?, number?]> {
    try {
      return (await this.script(leaseScript, [this.keys.lease(name)], [op, holder, token, Math.ceil(ttlMs)], (x) => op !== 'check' && (x as number[])[0] === 1)) as [number, number?, number?];
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const r = await this.lease('acquire', name, holder, 0, ttlMs);
    return r[0] === 1 ? { name, holder, token: Number(r[1]), expiresAt: Number(r[2]) } : null;
  }

  async renewLease(name: string, holder: string, token: number, ttlMs: number): Promise<boolean> {
    return (await this.lease('renew', name, holder, token, ttlMs))[0] === 1;
  }

  async checkLease(name: string, token: number): Promise<boolean> {
    return (await this.lease('check', name, '', token, 0))[0] === 1;
  }

  async releaseLease(name: string, holder: string, token: number): Promise<void> {
    await this.lease('release', name, holder, token, 0);
  }

  async heartbeat(hb: Heartbeat): Promise<HeartbeatResult> {
    const keys = [this.keys.members(), ...hb.leases.map((l) => this.keys.lease(l.name))];
    const args = [hb.member, Math.ceil(hb.ttlMs), hb.leave ? '1' : '0', ...hb.leases.map((l) => l.token)];
    try {
      // Like a renewal (lease()): under waitReplicas, an extension no replica has is not trusted.
      const [members, renewed] = (await this.script(heartbeatScript, keys, args, () => true)) as [string[], number[]];
      return { members, renewed: renewed.map((r) => Number(r) === 1) };
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  // ---- expiring records (records.lua) -------------------------------------------------------

  putRecords(space: string, batch: RecordBatch): Promise<void> {
    return this.bounded(async () => {
      if (this.closed) throw new StorageError('Unavailable', 'store is closed');
      const keys = [this.keys.recordIds(space), this.keys.recordLast(space), ...batch.writes.map((w) => this.keys.record(space, w.key))];
      const args: (string | number)[] = ['put', Math.max(1, Math.ceil(batch.ttlMs)), Math.floor(batch.time), batch.ids.length, ...batch.ids];
      for (const w of batch.writes) args.push(w.value, w.order ?? '');
      try {
        await this.script(recordsScript, keys, args, () => true);
      } catch (err) {
        throw this.unavailable(err);
      }
    });
  }

  getRecords(space: string, keys: string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return Promise.resolve([]);
    return this.bounded(async () => {
      let raw: (string | null)[];
      try {
        raw = await this.cmd.mget(...keys.map((k) => this.keys.record(space, k)));
      } catch (err) {
        throw this.unavailable(err);
      }
      return raw.map((v) => (v === null ? undefined : v.slice(v.indexOf('\n') + 1)));
    });
  }

  recordStats(space: string): Promise<RecordStats> {
    return this.bounded(async () => {
      let r: [number, string];
      try {
        r = (await recordsScript.run(this.cmd, [this.keys.recordIds(space), this.keys.recordLast(space)], ['stats'])) as [number, string];
      } catch (err) {
        throw this.unavailable(err);
      }
      return r[1] === '' ? { count: Number(r[0]) } : { count: Number(r[0]), lastTime: Number(r[1]) };
    });
  }

  unhealthyReason(): string | undefined {
    if (this.closed) return 'store is closed';
    if (this.cmd.status !== 'ready') return `redis connection ${this.cmd.status}${this.lastError ? `: ${this.lastError}` : ''}`;
    if (this.followerError) return `redis event log follower: ${this.followerError}`;
    return undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.cache.stop();
    this.cache.closeAll(new StorageError('Unavailable', 'store is closed'));
    this.wake?.();
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
  }
}

function noop(): void {}

/** Results of a MULTI/pipeline, throwing the first per-command error. */
function checked(out: [Error | null, unknown][] | null): unknown[] {
  if (!out) throw new Error('transaction aborted');
  return out.map(([err, v]) => {
    if (err) throw err;
    return v;
  });
}
