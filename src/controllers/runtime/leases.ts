// Leader election per object, and how replicas share the objects. A replica does a GitTarget's
// work only while it holds that target's lease in the Store, and it asks for the lease only when
// the target is its own: rendezvous hashing of the lease name over the live replicas (shards.ts).
//
// A GitTarget lease is a membership lease (src/storage/lease.ts): it names this replica's
// membership of the live replicas (its member id and the epoch the store gave the membership) and
// is held exactly as long as that membership is live, the way etcd attaches many keys to one lease.
// Every heartbeat interval (--replica-heartbeat-interval, default a third of the TTL) one store
// operation (Store.heartbeat: redis/heartbeat.lua, or the embedded store's equivalent) keeps the
// membership for one TTL and reads the live members: one operation, whatever the number of
// leases held. When a replica dies (SIGKILL) its membership expires within the TTL, and with it
// every lease it held; the others see it at their next heartbeat, within TTL + one interval. A
// membership that expired and came back has a new epoch: its old leases (and their fencing
// tokens) stay dead, so this replica drops them all and the controllers take them again. When the
// member list changes, onRebalance listeners (the mirror and windows controllers) look again at the
// targets whose owner changed: the old owner stops and releases, the new one takes the lease once
// it is free. A graceful stop releases every lease, then leaves the set, so the others take over at
// their next heartbeat. The fencing token lets a write check, right before it happens, that this
// replica still holds the lease (and that its membership is still live).
//
// A replica that the last heartbeat found alone (no other member takes a share) renews for
// --replica-solo-lease-ttl instead (default 2 min), a twelfth as often (soloTtlMs; every wake-up of
// an idle process is CPU at rest: docs/architecture.md, "At rest and at start-up"). Nobody is
// waiting for its leases then, and whoever comes takes no longer to take over than from any replica:
// - the heartbeat of a replica that joins cuts every membership kept beyond its own TTL back to it
//   (redis/heartbeat.lua), so a lone replica that crashed (a restarted container's successor) or
//   dies right after the join is taken over within the TTL;
// - that heartbeat writes the member log, which the lone replica's follower blocks on
//   (Store.onMembersChanged): it renews for the TTL at once (nudge()), so its membership, still
//   live, never lapses while it waits for its next solo heartbeat. A nudge that never arrives
//   (the follower was down) costs a lapse: the membership expires, the next heartbeat finds a new
//   epoch and the leases are taken again, as after any stall. The heartbeat stays the truth.
// The first heartbeat that sees another member goes back to the TTL and its interval.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { KubeObject, Store } from '../../storage/types.js';
import { clusterOf, keyOf } from './informer.js';
import type { Logger } from '../../metrics/logger.js';
import { ownerOf } from './shards.js';
import { realClock, type Clock, type ClockTimer } from './clock.js';

export type LeaseStore = Pick<Store, 'acquireMemberLease' | 'checkLease' | 'releaseLease' | 'heartbeat'> & Partial<Pick<Store, 'onMembersChanged'>>;

export interface HeldLease {
  readonly name: string;
  readonly token: number;
  /**
   * The fencing check: true while this replica still holds this token of the lease. The store
   * saying no drops the lease here; a store that cannot answer fails this check only (the write
   * waits and is retried), and the lease stays as long as the membership may still be live.
   */
  check(): Promise<boolean>;
}

export interface LeaseKeeperOptions {
  holder?: string;
  ttlMs?: number;
  /** How often the heartbeat runs (default ttlMs / 3). */
  heartbeatMs?: number;
  /**
   * The membership TTL while the last heartbeat found no other member taking a share (default
   * ttlMs: no difference; the server's flag defaults to 2 min). The heartbeat then
   * runs heartbeatMs × soloTtlMs / ttlMs apart.
   */
  soloTtlMs?: number;
  /**
   * Whether this replica takes a share of the GitTargets (default true). A replica that does not
   * run the windows controller (--controllers) must not: its share would never be committed. It
   * is still a live member (whatever leases it holds live with its membership), but takes no share.
   */
  member?: boolean;
  log?: Logger;
  /** The renewal timer (default: the wall clock). */
  clock?: Clock;
}

export const DEFAULT_LEASE_TTL_MS = 10_000;

/** The lease name for one GitTarget, shared by every controller that works on it (mirror, windows). */
export function targetLeaseName(t: { cluster: string; namespace: string; name: string; uid: string }): string {
  return `gittarget/${t.cluster}/${t.namespace}/${t.name}/${t.uid}`;
}

/** The lease name of a GitTarget object (the cluster from its kcp annotation, as the informer keys it). */
export function gitTargetLeaseName(gt: KubeObject): string {
  return targetLeaseName({ cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '', name: gt.metadata.name ?? '', uid: gt.metadata.uid ?? '' });
}

/** The informer keys of the GitTargets whose owner changed (this replica's before and not now, or the reverse). */
export function movedKeys(gitTargets: Iterable<KubeObject>, ownedBefore: (name: string) => boolean, owns: (name: string) => boolean): string[] {
  const moved: string[] = [];
  for (const gt of gitTargets) {
    const name = gitTargetLeaseName(gt);
    if (ownedBefore(name) !== owns(name)) moved.push(keyOf(gt, clusterOf(gt)));
  }
  return moved;
}

/** Called when the live members changed: `ownedBefore` says which lease names were this replica's until now. */
export type RebalanceListener = (ownedBefore: (name: string) => boolean) => void;

export class LeaseKeeper {
  readonly holder: string;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  readonly soloTtlMs: number;
  /** The heartbeat interval while alone: the same fraction of soloTtlMs as heartbeatMs is of ttlMs. */
  readonly soloHeartbeatMs: number;
  private readonly held = new Map<string, HeldLease>();
  /** Who in this process needs each held lease (e.g. the mirror and the windows controller); released when nobody does. */
  private readonly claims = new Map<string, Set<string>>();
  private readonly lostListeners: Array<(name: string) => void> = [];
  private readonly rebalanceListeners: RebalanceListener[] = [];
  /** The live replicas as of the last heartbeat; until the first one, this replica alone. */
  private liveMembers: readonly string[];
  /** The epoch of this replica's membership as of the last heartbeat; 0 before the first one. */
  private epoch = 0;
  /** The last heartbeat that succeeded found no other member taking a share (the solo TTL and interval apply). */
  private alone = false;
  /** The next heartbeat runs at once (the solo TTL it last renewed must be cut back to the TTL). */
  private renewNow = false;
  /** Another member changed the member set since the last heartbeat was sent: the next one renews for the TTL. */
  private nudged = false;
  private readonly unsubscribe: (() => void) | undefined;
  /** The TTL the last heartbeat that succeeded renewed the membership for. */
  private renewedTtlMs: number;
  private timer: ClockTimer | undefined;
  private beating: Promise<void> | undefined;
  private failing = false;
  private stopped = false;
  /**
   * When the membership may expire in the store (by this keeper's clock): the send time of the last
   * heartbeat that succeeded, plus the TTL. The store starts the TTL when it runs the heartbeat,
   * which is after it was sent, so this errs on the early side.
   */
  private liveUntil = 0;
  private readonly clock: Clock;

  constructor(
    private readonly store: LeaseStore,
    private readonly opts: LeaseKeeperOptions = {},
  ) {
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.ttlMs = opts.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.heartbeatMs = Math.max(50, opts.heartbeatMs ?? Math.floor(this.ttlMs / 3));
    this.soloTtlMs = Math.max(this.ttlMs, opts.soloTtlMs ?? this.ttlMs);
    this.soloHeartbeatMs = Math.floor((this.heartbeatMs * this.soloTtlMs) / this.ttlMs);
    this.renewedTtlMs = this.ttlMs;
    this.liveMembers = [this.holder];
    this.clock = opts.clock ?? realClock;
    this.unsubscribe = store.onMembersChanged?.((by) => by !== this.holder && this.nudge());
    this.schedule();
  }

  /**
   * Another member's heartbeat changed the member set (it joined, left or expired, or cut this
   * replica's solo TTL): renew now, for the TTL, and see the new members. One heartbeat, however
   * many nudges arrive meanwhile; this replica's own heartbeats never nudge it.
   */
  private nudge(): void {
    if (this.stopped) return;
    this.nudged = true;
    if (this.beating) this.renewNow = true;
    else this.schedule(0);
  }

  /** The next heartbeat, one interval after the last one ended. */
  private schedule(delayMs?: number): void {
    this.timer?.cancel();
    const ms = delayMs ?? (this.renewNow ? 0 : this.intervalMs());
    this.renewNow = false;
    this.timer = this.stopped ? undefined : this.clock.setTimeout(() => void this.beat(), ms);
  }

  /**
   * The interval that the TTL last renewed allows: the solo interval only once a heartbeat renewed
   * for the solo TTL. The heartbeat that first finds this replica alone renewed for the TTL; the
   * next one must come within it.
   */
  private intervalMs(): number {
    // A heartbeat that failed is tried again one (short) interval later, alone or not.
    return this.alone && !this.failing && this.renewedTtlMs === this.soloTtlMs ? this.soloHeartbeatMs : this.heartbeatMs;
  }

  /** Joins the live members now (the first heartbeat), so ownership is known before the controllers start. */
  async start(): Promise<void> {
    await this.beat();
  }

  /** The live replicas, sorted (this one included). */
  members(): readonly string[] {
    return this.liveMembers;
  }

  /** True when `name` is this replica's to work on, by rendezvous hashing over the live members. */
  owns(name: string): boolean {
    return ownerOf(name, this.liveMembers) === this.holder;
  }

  /**
   * The lease if this replica holds it, taking it when free or expired; undefined when another
   * replica holds it, or when it is not this replica's own (owns()). `claimant` names who in this
   * process needs it (default ''): the lease is given back only when every claimant released it.
   */
  async acquire(name: string, claimant = ''): Promise<HeldLease | undefined> {
    if (this.stopped || !this.owns(name)) return undefined;
    const cur = this.held.get(name);
    if (cur) {
      this.claim(name, claimant);
      return cur;
    }
    // Not a member yet (start() not called, or the first heartbeat failed): join first.
    if (this.epoch === 0) await this.beat();
    if (this.epoch === 0 || this.stopped) return undefined;
    const l = await this.store.acquireMemberLease(name, this.holder, this.epoch);
    if (!l || this.stopped) return undefined;
    const raced = this.held.get(name);
    if (raced) {
      this.claim(name, claimant);
      return raced;
    }
    const lease: HeldLease = {
      name,
      token: l.token,
      check: async () => {
        let ok: boolean;
        try {
          ok = await this.store.checkLease(name, l.token);
        } catch {
          // Cannot verify (the store is failing over, or unreachable): this write does not
          // happen (fail closed), but the lease is not dropped for it; the heartbeat drops every
          // lease once the membership may have expired.
          return false;
        }
        // Not held in the store (e.g. a Redis failover lost the lease's last write): drop it here
        // too, so the controllers stop and ask for it again instead of failing their fence forever.
        if (!ok) this.lose(lease);
        return ok;
      },
    };
    this.held.set(name, lease);
    this.claim(name, claimant);
    this.opts.log?.info('lease acquired', { lease: name, token: l.token });
    return lease;
  }

  /** Held by this replica (as far as the last heartbeat knows). */
  holds(name: string): HeldLease | undefined {
    return this.held.get(name);
  }

  /** How many leases this replica holds. */
  heldCount(): number {
    return this.held.size;
  }

  private claim(name: string, claimant: string): void {
    let c = this.claims.get(name);
    if (!c) this.claims.set(name, (c = new Set()));
    c.add(claimant);
  }

  /** Drops `claimant`'s claim; the lease goes back to the store when no claim is left. */
  async release(name: string, claimant = ''): Promise<void> {
    const c = this.claims.get(name);
    c?.delete(claimant);
    if (c && c.size > 0) return;
    this.claims.delete(name);
    const l = this.held.get(name);
    if (!l) return;
    this.held.delete(name);
    await this.store.releaseLease(name, this.holder, l.token).catch(() => undefined);
  }

  onLost(listener: (name: string) => void): void {
    this.lostListeners.push(listener);
  }

  onRebalance(listener: RebalanceListener): void {
    this.rebalanceListeners.push(listener);
  }

  /** Releases every lease, then leaves the live members, so the others take over at their next heartbeat. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.timer?.cancel();
    await this.beating;
    this.claims.clear();
    await Promise.all([...this.held.keys()].map((n) => this.release(n)));
    await this.store.heartbeat({ member: this.holder, ttlMs: this.ttlMs, leave: true }).catch(() => undefined);
  }

  /** One heartbeat at a time: a slow store never stacks them up. */
  private beat(): Promise<void> {
    if (this.beating) return this.beating;
    this.beating = this.heartbeat().finally(() => {
      this.beating = undefined;
      this.schedule();
    });
    return this.beating;
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    let r;
    const sentAt = this.clock.now();
    const nudged = this.nudged;
    const ttlMs = this.alone && !nudged ? this.soloTtlMs : this.ttlMs;
    this.nudged = false;
    try {
      r = await this.store.heartbeat({ member: this.holder, ttlMs, share: this.opts.member !== false });
    } catch (e) {
      // The membership stays live in the store until its TTL runs out, and every write checks
      // its lease there first (check() above), so a failed heartbeat does not end the leases by
      // itself: a store failover shorter than the TTL costs nothing (before, every replica dropped
      // every lease and re-snapshotted its GitTargets). Once the next heartbeat could come too
      // late, the membership may expire and the leases be taken: they are given up here (fail
      // closed), their work stops, and the controllers ask again when the store answers.
      const first = !this.failing;
      this.failing = true;
      const intervalMs = this.intervalMs();
      const expiring = this.clock.now() + intervalMs >= this.liveUntil;
      if (first) this.opts.log?.warn('heartbeat failed', { error: (e as Error).message, leases: this.held.size, leasesKeptMs: Math.max(0, Math.round(this.liveUntil - intervalMs - this.clock.now())) });
      // A nudge this heartbeat carried still holds: the next one renews for the TTL.
      if (nudged) this.nudged = true;
      if (expiring && this.held.size > 0) {
        this.opts.log?.warn('heartbeat failed until the membership may expire: leases given up until the store answers', { leases: this.held.size });
        for (const l of [...this.held.values()]) this.lose(l);
      }
      return;
    }
    if (this.failing) this.opts.log?.info('heartbeat works again');
    this.failing = false;
    this.liveUntil = sentAt + ttlMs;
    this.renewedTtlMs = ttlMs;
    if (this.stopped) return;
    if (this.epoch !== 0 && r.epoch !== this.epoch) {
      // The membership had expired (a stall, or the store lost it): every lease it held is gone.
      this.opts.log?.warn('membership expired and renewed: its leases are lost', { epoch: this.epoch, next: r.epoch, leases: this.held.size });
      for (const l of [...this.held.values()]) this.lose(l);
    }
    this.epoch = r.epoch;
    const wasAlone = this.alone;
    this.alone = r.members.every((m) => m === this.holder);
    // This heartbeat kept the membership for the solo TTL: renew it for the TTL at once, so that
    // the replica that just joined takes over within the TTL should this one die now.
    if (wasAlone && !this.alone && ttlMs > this.ttlMs) this.renewNow = true;
    if (this.opts.member !== false) this.setMembers(r.members.includes(this.holder) ? r.members : [...r.members, this.holder].sort());
  }

  private lose(l: HeldLease): void {
    if (this.held.get(l.name) !== l) return;
    this.held.delete(l.name);
    this.claims.delete(l.name);
    this.opts.log?.warn('lease lost', { lease: l.name, token: l.token });
    for (const fn of this.lostListeners) fn(l.name);
  }

  private setMembers(next: string[]): void {
    const prev = this.liveMembers;
    if (prev.length === next.length && prev.every((m, i) => m === next[i])) return;
    this.liveMembers = next;
    const joined = next.filter((m) => !prev.includes(m));
    const left = prev.filter((m) => !next.includes(m));
    this.opts.log?.info('replicas changed', { replicas: next.length, joined, left });
    for (const fn of this.rebalanceListeners) fn((name) => ownerOf(name, prev) === this.holder);
  }
}
