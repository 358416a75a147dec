// Leader election per object: a replica does a GitTarget's work only while it holds that
// target's lease in the Store. Leases are renewed every ttl/3; a replica that dies stops renewing
// and another one takes over once the TTL ran out (10 s by default, so with the controllers'
// 2 s retry a takeover happens within ~12 s). The fencing token lets a write check, right before
// it happens, that this replica still holds the lease.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Store } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';
import { realClock, type Clock, type ClockTimer } from './clock.js';

export type LeaseStore = Pick<Store, 'acquireLease' | 'renewLease' | 'checkLease' | 'releaseLease'>;

export interface HeldLease {
  readonly name: string;
  readonly token: number;
  /** The fencing check: true while this replica still holds this token of the lease. */
  check(): Promise<boolean>;
}

export interface LeaseKeeperOptions {
  holder?: string;
  ttlMs?: number;
  log?: Logger;
  /** The renewal timer (default: the wall clock). */
  clock?: Clock;
}

export const DEFAULT_LEASE_TTL_MS = 10_000;

/** The lease name for one GitTarget, shared by every controller that works on it (mirror, windows). */
export function targetLeaseName(t: { cluster: string; namespace: string; name: string; uid: string }): string {
  return `gittarget/${t.cluster}/${t.namespace}/${t.name}/${t.uid}`;
}

export class LeaseKeeper {
  readonly holder: string;
  readonly ttlMs: number;
  private readonly held = new Map<string, HeldLease>();
  /** Who in this process needs each held lease (e.g. the mirror and the windows controller); released when nobody does. */
  private readonly claims = new Map<string, Set<string>>();
  private readonly lostListeners: Array<(name: string) => void> = [];
  private timer: ClockTimer;
  private stopped = false;

  constructor(
    private readonly store: LeaseStore,
    private readonly opts: LeaseKeeperOptions = {},
  ) {
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.ttlMs = opts.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.timer = (opts.clock ?? realClock).setInterval(() => void this.renewAll(), Math.max(50, Math.floor(this.ttlMs / 3)));
  }

  /**
   * The lease if this replica holds it, taking it when free or expired; undefined when another
   * replica holds it. `claimant` names who in this process needs it (default ''): the lease is
   * given back only when every claimant released it.
   */
  async acquire(name: string, claimant = ''): Promise<HeldLease | undefined> {
    if (this.stopped) return undefined;
    const cur = this.held.get(name);
    if (cur) {
      this.claim(name, claimant);
      return cur;
    }
    const l = await this.store.acquireLease(name, this.holder, this.ttlMs);
    if (!l || this.stopped) return undefined;
    const raced = this.held.get(name);
    if (raced) {
      this.claim(name, claimant);
      return raced;
    }
    const lease: HeldLease = { name, token: l.token, check: () => this.store.checkLease(name, l.token).catch(() => false) };
    this.held.set(name, lease);
    this.claim(name, claimant);
    this.opts.log?.info('lease acquired', { lease: name, token: l.token });
    return lease;
  }

  /** Held by this replica (as far as the last renewal knows). */
  holds(name: string): HeldLease | undefined {
    return this.held.get(name);
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

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer.cancel();
    this.claims.clear();
    await Promise.all([...this.held.keys()].map((n) => this.release(n)));
  }

  private async renewAll(): Promise<void> {
    for (const [name, l] of [...this.held]) {
      const ok = await this.store.renewLease(name, this.holder, l.token, this.ttlMs).catch(() => false);
      if (ok || this.held.get(name) !== l) continue;
      this.held.delete(name);
      this.claims.delete(name);
      this.opts.log?.warn('lease lost', { lease: name, token: l.token });
      for (const fn of this.lostListeners) fn(name);
    }
  }
}
