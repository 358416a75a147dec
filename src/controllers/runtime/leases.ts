// Leader election per object: a replica does a GitTarget's work only while it holds that
// target's lease in the Store. Leases are renewed every ttl/3; a replica that dies stops renewing
// and another one takes over once the TTL ran out (10 s by default, so with the controllers'
// 2 s retry a takeover happens within ~12 s). The fencing token lets a write check, right before
// it happens, that this replica still holds the lease.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Store } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';

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
  private readonly lostListeners: Array<(name: string) => void> = [];
  private timer: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly store: LeaseStore,
    private readonly opts: LeaseKeeperOptions = {},
  ) {
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.ttlMs = opts.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.timer = setInterval(() => void this.renewAll(), Math.max(50, Math.floor(this.ttlMs / 3)));
    this.timer.unref?.();
  }

  /** The lease if this replica holds it, taking it when free or expired; undefined when another replica holds it. */
  async acquire(name: string): Promise<HeldLease | undefined> {
    if (this.stopped) return undefined;
    const cur = this.held.get(name);
    if (cur) return cur;
    const l = await this.store.acquireLease(name, this.holder, this.ttlMs);
    if (!l || this.stopped) return undefined;
    const lease: HeldLease = { name, token: l.token, check: () => this.store.checkLease(name, l.token).catch(() => false) };
    this.held.set(name, lease);
    this.opts.log?.info('lease acquired', { lease: name, token: l.token });
    return lease;
  }

  /** Held by this replica (as far as the last renewal knows). */
  holds(name: string): HeldLease | undefined {
    return this.held.get(name);
  }

  async release(name: string): Promise<void> {
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
    clearInterval(this.timer);
    await Promise.all([...this.held.keys()].map((n) => this.release(n)));
  }

  private async renewAll(): Promise<void> {
    for (const [name, l] of [...this.held]) {
      const ok = await this.store.renewLease(name, this.holder, l.token, this.ttlMs).catch(() => false);
      if (ok || this.held.get(name) !== l) continue;
      this.held.delete(name);
      this.opts.log?.warn('lease lost', { lease: name, token: l.token });
      for (const fn of this.lostListeners) fn(name);
    }
  }
}
