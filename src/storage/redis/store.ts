// The Redis store. Writes are one Lua script each (write.lua); reads are served from a per-process
// WatchCache fed by the resources' event logs (Redis Streams), made consistent by reading the RV
// counter first ("consistent reads from cache"): follower.ts. Design and failure handling: docs/storage.md.

import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { RedisKeys, objectField, resourceId } from '../keys.js';
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
  type WatchCallbacks,
  type WatchHandle,
  type WatchOptions,
} from '../types.js';
import { listFromCache } from '../watch-cache.js';
import { encodeForWrite } from './codec.js';
import { FOLLOW_BLOCK_MS, RedisCacheFollower } from './follower.js';
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
  private readonly follower: RedisCacheFollower;
  private lastError: string | undefined;
  private closed = false;
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
    const subOpts = { ...base, commandTimeout: FOLLOW_BLOCK_MS + timeout };
    if (opts.clusterNodes?.length) {
      this.keys = new RedisKeys(opts.keyPrefix, true);
      const nodes = opts.clusterNodes.map((n) => ({ host: n.slice(0, n.lastIndexOf(':')), port: Number(n.slice(n.lastIndexOf(':') + 1)) }));
      // retryDelayOnFailover 0: ioredis's Cluster client otherwise sends a command again when its
      // node's connection closed before the reply, which for a write the node may already have run
      // (and replicated) applies it twice; like the clients above, it fails as Unavailable instead
      // (test/storage/redis-cluster-resend.test.ts). MOVED, ASK, TRYAGAIN and CLUSTERDOWN answers
      // say the command did not run, and are still followed.
      const clusterOpts = { enableOfflineQueue: false, retryDelayOnFailover: 0 };
      this.cmd = new Cluster(nodes, { ...clusterOpts, redisOptions: base });
      this.sub = new Cluster(nodes, { ...clusterOpts, redisOptions: subOpts });
    } else {
      this.keys = new RedisKeys(opts.keyPrefix);
      // Commands issued in one event-loop turn leave in one socket write: at 50 edits/s over 1,000
      // tenants, one write(2) per command was ~15% of the main thread (bench/scale profile). Order
      // and per-command timeouts are kept; the follower's blocking XREAD keeps its own connection.
      const cmdOpts: RedisOptions = { ...base, enableAutoPipelining: true };
      this.cmd = opts.url ? new Redis(opts.url, cmdOpts) : new Redis(cmdOpts);
      this.sub = opts.url ? new Redis(opts.url, subOpts) : new Redis(subOpts);
    }
    for (const c of [this.cmd, this.sub]) c.on('error', (err: Error) => (this.lastError = err.message));
    this.health = new RedisHealth(timeout, opts.log, () => !this.closed && this.cmd.status === 'ready', () => this.lastError);
    this.cmd.on('error', (err: Error) => !this.closed && this.health.lost(err.message));
    this.cmd.on('close', () => !this.closed && this.health.lost(this.lastError ?? 'connection closed'));
    this.cmd.on('ready', () => this.health.recovered());
    this.follower = new RedisCacheFollower({
      cmd: this.cmd,
      sub: this.sub,
      keys: this.keys,
      health: this.health,
      unhealthyReason: () => this.unhealthyReason(),
      retention: opts.eventLogRetention,
      progressIntervalMs: opts.progressIntervalMs,
      freezeObjects: opts.freezeObjects,
    });
  }

  async start(waitMs: number): Promise<void> {
    const ready = (c: Redis | Cluster) => new Promise<void>((r) => (c.status === 'ready' ? r() : c.once('ready', () => r())));
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([ready(this.cmd), ready(this.sub)]), new Promise((r) => (t = setTimeout(r, waitMs)))]);
    clearTimeout(t);
    this.follower.start();
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
    const st = await this.follower.state(res);
    if (opts?.consistency !== 'any') await this.follower.sync(st).catch((e) => Promise.reject(this.unavailable(e)));
    return st.rc.get(key);
  }

  list(res: ResourceRef, opts: ListOptions = {}): Promise<ListResult> {
    return this.bounded(() => this.listNow(res, opts));
  }

  private async listNow(res: ResourceRef, opts: ListOptions): Promise<ListResult> {
    const st = await this.follower.state(res);
    if (opts.consistency !== 'any') await this.follower.sync(st).catch((e) => Promise.reject(this.unavailable(e)));
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
      r = (await this.script(writeScript, keys, [op, objectField(key), expectedRV ?? '', key.cluster, head, tail, this.follower.cache.retentionOf(resourceId(res))], (x) => (x as string[])[0] === 'ok')) as typeof r;
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
    this.follower.seen(rv);
    return JSON.parse(op === 'delete' ? r[2]! : head + rv + tail);
  }

  async watch(res: ResourceRef, opts: WatchOptions, cb: WatchCallbacks): Promise<WatchHandle> {
    const bad = this.unhealthyReason();
    if (bad) throw new StorageError('Unavailable', bad);
    const st = await this.follower.state(res);
    if (st.reloading) await st.reloading;
    return st.rc.watch(opts, cb);
  }

  async currentRV(): Promise<number> {
    try {
      const rv = Number((await this.cmd.get(this.keys.rv())) ?? 0);
      this.follower.seen(rv);
      return rv;
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  /** Known once the resource is in this process's cache; 0 before (a watch loads it first). */
  oldestRetainedRV(res: ResourceRef): number {
    const id = resourceId(res);
    const cache = this.follower.cache;
    return cache.has(id) ? cache.resource(id).oldestRV : 0;
  }

  private async lease(op: string, name: string, holder: string, token: number, ttlMs: number, epoch = ''): Promise<[number, number?, number?]> {
    const keys = [this.keys.lease(name), this.keys.members(), this.keys.memberEpochs()];
    try {
      return (await this.script(leaseScript, keys, [op, holder, token, Math.ceil(ttlMs), epoch], (x) => op !== 'check' && (x as number[])[0] === 1)) as [number, number?, number?];
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const r = await this.lease('acquire', name, holder, 0, ttlMs);
    return r[0] === 1 ? { name, holder, token: Number(r[1]), expiresAt: Number(r[2]) } : null;
  }

  async acquireMemberLease(name: string, holder: string, epoch: number): Promise<Lease | null> {
    if (!(epoch > 0)) return null;
    const r = await this.lease('acquire', name, holder, 0, 0, String(epoch));
    return r[0] === 1 ? { name, holder, token: Number(r[1]), expiresAt: 0 } : null;
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
    const keys = [this.keys.members(), this.keys.memberEpochs(), this.keys.memberEpochCounter(), this.keys.memberLog()];
    const args = [hb.member, Math.ceil(hb.ttlMs), hb.leave ? '1' : '0', hb.share === false ? '0' : '1'];
    try {
      // Like a renewal (lease()): under waitReplicas, an extension no replica has is not trusted.
      const [members, epoch] = (await this.script(heartbeatScript, keys, args, () => true)) as [string[], number];
      return { members, epoch: Number(epoch) };
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  onMembersChanged(listener: (by: string) => void): () => void {
    return this.follower.onMembersChanged(listener);
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
    if (this.follower.error) return `redis event log follower: ${this.follower.error}`;
    return undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.follower.stop();
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
  }
}
