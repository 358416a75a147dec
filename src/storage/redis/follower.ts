// The Redis store's per-process cache (src/storage/watch-cache.ts), loaded from Redis and kept
// current from the resources' event logs (Redis Streams): one blocking XREAD over every loaded log on
// its own connection, a catch-up read before each consistent read ("consistent reads from cache"),
// and a reload when the log was trimmed unseen or the counter went back (Redis lost data).
// store.ts writes through Lua scripts and reads through this; design and failures: docs/storage.md.
import { Cluster, Redis } from 'ioredis';
import { type RedisKeys, parseObjectField, resourceId } from '../keys.js';
import { StorageError, type KubeObject, type ObjectKey, type ResourceRef, type StoreEvent } from '../types.js';
import { parseShared, shareWithPrevious } from '../shared-values.js';
import { WatchCache, type ResourceCache } from '../watch-cache.js';
import { decodeEntry } from './codec.js';
import type { RedisHealth } from './health.js';

type Raw = [string, string[]];

export interface ResState {
  res: ResourceRef;
  logKey: string;
  rc: ResourceCache;
  /** RV of the last event-log entry applied (the follower resumes after it). */
  lastLogRV: number;
  inflight?: Promise<void>;
  queued?: Promise<void>;
  reloading?: Promise<void>;
}

export interface FollowerDeps {
  cmd: Redis | Cluster;
  /** The follower's own connection: its XREAD blocks (store.ts gives it a longer command timeout). */
  sub: Redis | Cluster;
  keys: RedisKeys;
  health: RedisHealth;
  /** Why the store cannot serve; the periodic sync waits while there is a reason. */
  unhealthyReason: () => string | undefined;
  retention?: number;
  progressIntervalMs?: number;
  freezeObjects?: boolean;
}

/**
 * How long the follower's XREAD blocks when nothing is written; the follower connection's command
 * timeout adds this. A write ends the block at once, and so does a newly loaded log (CLIENT
 * UNBLOCK, init()), and close() disconnects the connection: the block's length only decides how
 * often a server at rest asks Redis again (5 s was 12 round trips a minute, a sixth of what the
 * server did at rest, docs/architecture.md "At rest and at start-up"), and how long a connection
 * that died without a reset (a frozen Redis, a cut network path) goes unnoticed by the follower;
 * the other connection's commands (the heartbeat every 3.3 s, every request) notice it within the
 * command timeout, and requests answer 503 meanwhile.
 */
export const FOLLOW_BLOCK_MS = 60_000;

export class RedisCacheFollower {
  readonly cache: WatchCache;
  /** Why the event logs cannot be followed (store.ts unhealthyReason), until the follower recovers. */
  error: string | undefined;
  private readonly states = new Map<string, Promise<ResState>>();
  private readonly byLog = new Map<string, ResState>();
  private subId: number | undefined;
  private blocked = false;
  /** How many logs the XREAD in flight covers (byLog only grows: fewer than byLog.size means one is missing). */
  private covered = 0;
  private unblocking = false;
  private wake: (() => void) | undefined;
  private maxRV = 0;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  /** Told of member set changes (Store.onMembersChanged): while any is, the XREAD covers the member log too. */
  private readonly memberListeners = new Set<(by: string) => void>();
  /** The XREAD in flight covers the member log. */
  private coveredMembers = false;
  /**
   * The last member log entry seen. From the start of the log at first: the few entries it keeps
   * (MAXLEN 16) are told once, a spurious renewal at most, where starting from its newest entry
   * (read after the listener subscribed) could miss one written in between.
   */
  private memberLogId = '0-0';

  constructor(private readonly deps: FollowerDeps) {
    deps.sub.on('ready', () => {
      if (deps.sub instanceof Redis) deps.sub.client('ID').then((id) => (this.subId = Number(id)), () => {});
    });
    // Idle resources with served watches are synced periodically so bookmarks carry the latest
    // RV; with none (the controllers' own informers take no bookmarks) nothing ticks.
    const onProgressDemand = (listening: boolean): void => {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
      if (!listening || this.closed) return;
      this.timer = setInterval(() => void this.progress(), deps.progressIntervalMs || 1000);
      this.timer.unref();
    };
    this.cache = new WatchCache({ retention: deps.retention, progressIntervalMs: deps.progressIntervalMs, freeze: deps.freezeObjects, onProgressDemand });
  }

  start(): void {
    void this.follow();
  }

  /** Ends the follower and every watch (they end with Unavailable; clients re-list elsewhere). */
  stop(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.cache.stop();
    this.cache.closeAll(new StorageError('Unavailable', 'store is closed'));
    this.wake?.();
  }

  /**
   * Tells `listener` of every member log entry (redis/heartbeat.lua writes one per change of the
   * member set), and of a recovery from an outage with '' (entries may have been missed while the
   * follower was down). Returns the unsubscribe.
   */
  onMembersChanged(listener: (by: string) => void): () => void {
    this.memberListeners.add(listener);
    void this.interrupt();
    this.wake?.();
    return () => this.memberListeners.delete(listener);
  }

  /** The XREAD in flight misses a loaded log, or the member log while someone listens to it. */
  private uncovered(): boolean {
    return this.covered < this.byLog.size || (!this.coveredMembers && this.memberListeners.size > 0);
  }

  /** The cached state of `res`, loaded on first use (and the follower told to include its log). */
  state(res: ResourceRef): Promise<ResState> {
    const id = resourceId(res);
    let p = this.states.get(id);
    if (!p) {
      p = this.init(res).catch((err) => {
        this.states.delete(id);
        throw this.deps.health.unavailable(err);
      });
      this.states.set(id, p);
    }
    return p;
  }

  private async init(res: ResourceRef): Promise<ResState> {
    const st: ResState = { res, logKey: this.deps.keys.log(res), rc: this.cache.resource(resourceId(res)), lastLogRV: 0 };
    await this.reload(st);
    this.byLog.set(st.logKey, st);
    void this.interrupt();
    this.wake?.();
    return st;
  }

  /**
   * Ends the XREAD in flight while it does not cover every loaded log, so that the next one covers
   * the log just loaded. CLIENT UNBLOCK goes over the command connection and can reach Redis before
   * the XREAD it should end (sent a moment earlier over the follower's own connection): it then ends
   * nothing, and that XREAD would block for FOLLOW_BLOCK_MS without the new log, whose watchers
   * would hear nothing meanwhile (test/storage/redis-follower-unblock.test.ts). So it is sent again,
   * a few ms apart, until the XREAD in flight covers every log; extra XREADs lose nothing (each
   * resumes from the last entry applied). Cluster has no CLIENT UNBLOCK: its XREAD blocks 500 ms.
   */
  private async interrupt(): Promise<void> {
    if (this.unblocking || !(this.deps.cmd instanceof Redis)) return;
    this.unblocking = true;
    try {
      for (let pause = 1; !this.closed && this.blocked && this.uncovered(); pause = Math.min(pause * 2, 100)) {
        if (this.subId !== undefined) await this.deps.cmd.client('UNBLOCK', this.subId).catch(() => 0);
        await new Promise((r) => setTimeout(r, pause));
      }
    } finally {
      this.unblocking = false;
    }
  }

  /** Atomically read every object, the counter and the retained log of `st.res`; replace the cache. */
  private reload(st: ResState): Promise<void> {
    st.reloading ??= (async () => {
      try {
        const res = st.res;
        for (;;) {
          const members = await this.deps.cmd.smembers(this.deps.keys.clusters(res));
          const m = this.deps.cmd.multi().get(this.deps.keys.rv()).smembers(this.deps.keys.clusters(res));
          for (const c of members) m.hgetall(this.deps.keys.objects(c, res));
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
              const obj = parseShared(json, undefined);
              objects.push([parseObjectField(c, f), obj]);
              byField.set(`${c}\u0000${f}`, obj);
            }
          });
          const entries = (out[2 + members.length] as Raw[]).map(decodeEntry).reverse();
          // History and current objects share instances where they are the same state, so a fresh
          // process does not hold two parsed copies of every recently written object, and each
          // version shares with the one before it what its write did not change (shared-values.ts).
          const lastByField = new Map<string, KubeObject>();
          const history: StoreEvent[] = entries.map((e) => {
            const k = `${e.cluster}\u0000${e.field}`;
            const cur = byField.get(k);
            const prevObject = e.prevJson && e.type !== 'ADDED' ? (lastByField.get(k) ?? parseShared(e.prevJson, undefined)) : undefined;
            const object = cur && cur.metadata.resourceVersion === String(e.rv) ? shareWithPrevious(cur, prevObject) : parseShared(e.json, prevObject);
            const ev: StoreEvent = { type: e.type, rv: e.rv, cluster: e.cluster, object };
            if (prevObject) ev.prevObject = prevObject;
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
      const key = parseObjectField(e.cluster, e.field);
      st.rc.apply(e.type, key, parseShared(e.json, st.rc.get(key)), e.rv);
      st.lastLogRV = e.rv;
      this.seen(e.rv);
    }
  }

  /**
   * Catch the cache of `st` up with every write acknowledged before this call: read the counter,
   * then the log after our position, in one pipelined round trip. Concurrent callers share one
   * request; a caller arriving while one is in flight waits for the next (which starts after it).
   */
  sync(st: ResState): Promise<void> {
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
    const out = checked(await this.deps.cmd.pipeline().get(this.deps.keys.rv()).xrange(st.logKey, `(${st.lastLogRV}-0`, '+').exec());
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
    if (this.deps.unhealthyReason()) return;
    const watched = [...this.byLog.values()].filter((st) => st.rc.progressWatcherCount > 0);
    if (watched.length === 0) return;
    const rv = Number((await this.deps.cmd.get(this.deps.keys.rv()).catch(() => undefined)) ?? NaN);
    if (rv === this.maxRV && watched.every((st) => st.rc.syncedRV >= rv && !st.reloading && !st.inflight)) return;
    for (const st of watched) this.sync(st).catch(() => {});
  }

  /** One blocking XREAD over every loaded log, on its own connection. */
  private async follow(): Promise<void> {
    let backoff = 50;
    while (!this.closed) {
      const sts = [...this.byLog.values()];
      const members = this.memberListeners.size > 0;
      if (sts.length === 0 && !members) {
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
        continue;
      }
      const memberLog = this.deps.keys.memberLog();
      try {
        const keys = sts.map((s) => s.logKey);
        const ids = sts.map((s) => `${s.lastLogRV}-0`);
        if (members) keys.push(memberLog), ids.push(this.memberLogId);
        this.blocked = true;
        this.covered = sts.length;
        this.coveredMembers = members;
        // No CLIENT UNBLOCK on Cluster: its XREAD blocks 500 ms. After an outage so does the first
        // one: its answer is what shows the follower recovered (recovered() below), and one that
        // blocked FOLLOW_BLOCK_MS waited for the next write, up to 60 s with /readyz failing, when
        // none came (test/storage/redis-fault.test.ts).
        const block = this.deps.sub instanceof Cluster || this.error ? 500 : FOLLOW_BLOCK_MS;
        const r = (await this.deps.sub.xread('COUNT', 1000, 'BLOCK', block, 'STREAMS', ...keys, ...ids)) as [string, Raw[]][] | null;
        this.blocked = false;
        if (this.error) {
          await this.recovered();
          this.tellMembers(['']);
        }
        for (const [k, entries] of r ?? []) {
          if (k === memberLog) {
            this.memberLogId = entries.at(-1)?.[0] ?? this.memberLogId;
            this.tellMembers(entries.map((e) => e[1][1] ?? ''));
            continue;
          }
          const st = this.byLog.get(k);
          if (st && !st.reloading) this.apply(st, entries);
        }
        backoff = 50;
      } catch (err) {
        this.blocked = false;
        if (this.closed) return;
        if (!this.error) {
          this.error = this.deps.health.describe(err as Error);
          // Watches end cleanly; clients re-list (and get 503 until Redis is back).
          this.cache.closeAll(new StorageError('Unavailable', this.error));
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 250);
      }
    }
  }

  private tellMembers(by: string[]): void {
    for (const m of new Set(by)) for (const fn of this.memberListeners) fn(m);
  }

  private async recovered(): Promise<void> {
    const known = this.maxRV;
    const rv = Number((await this.deps.cmd.get(this.deps.keys.rv())) ?? 0);
    if (rv < known) {
      this.maxRV = rv;
      for (const s of this.byLog.values()) await this.reload(s);
    }
    this.error = undefined;
  }
  /** The highest RV this process has seen (a lower counter later means Redis lost data). */
  seen(rv: number): void {
    if (rv > this.maxRV) this.maxRV = rv;
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
