// One writer per (repository, branch) across processes: a lease in the store, with its fencing
// token checked right before every push, so a writer that stalled past its TTL and lost the lease
// cannot push over its successor.
import { createHash } from 'node:crypto';
import type { Store } from '../storage/types.js';
import { GitEngineError } from './errors.js';
import { cancellableSleep } from './cancel.js';

export type LeaseProvider = Pick<Store, 'acquireLease' | 'renewLease' | 'checkLease' | 'releaseLease'>;

export function branchLeaseName(repositoryKey: string, branch: string): string {
  return `git-branch/${createHash('sha256').update(repositoryKey).digest('hex').slice(0, 24)}/${branch}`;
}

export class BranchLease {
  private lost = false;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly provider: LeaseProvider,
    readonly name: string,
    readonly holder: string,
    readonly token: number,
    private readonly ttlMs: number,
    /** The first request did not get it: another writer held it (and may just have pushed). */
    readonly waited = false,
  ) {
    // Renew well before expiry; a failed renewal means someone else may now hold it.
    this.timer = setInterval(() => {
      this.provider.renewLease(name, holder, token, ttlMs).then(
        (ok) => {
          if (!ok) this.lost = true;
        },
        () => {
          this.lost = true;
        },
      );
    }, Math.max(50, Math.floor(ttlMs / 3)));
    this.timer.unref();
  }

  /** Waits (with backoff) until the lease is ours, or throws Conflict at the deadline. */
  static async acquire(provider: LeaseProvider, name: string, holder: string, ttlMs: number, deadline: number): Promise<BranchLease> {
    let delay = 20;
    let storeError: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        const lease = await provider.acquireLease(name, holder, ttlMs);
        if (lease) return new BranchLease(provider, name, holder, lease.token, ttlMs, attempt > 1);
        storeError = undefined;
      } catch (e) {
        // The store may be down for a moment: keep trying until the deadline, then say so.
        storeError = e;
      }
      if (Date.now() + delay > deadline) {
        if (storeError) throw new GitEngineError('Unreachable', `cannot take the write lease ${name}: the store failed (${(storeError as Error).message ?? storeError})`);
        throw new GitEngineError('Conflict', `another writer holds the lease ${name}; gave up waiting`);
      }
      await cancellableSleep(delay * (0.5 + Math.random()));
      delay = Math.min(delay * 2, 1000);
    }
  }

  /** The fencing check: throws LeaseLost unless our token is still the current one. */
  async fence(): Promise<void> {
    // Fail closed: a lease we cannot verify is treated as lost.
    const current = !this.lost && (await this.provider.checkLease(this.name, this.token).catch(() => false));
    if (!current) {
      this.lost = true;
      throw new GitEngineError('LeaseLost', `lost the write lease ${this.name} (token ${this.token}); stopped before pushing`);
    }
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    if (!this.lost) await this.provider.releaseLease(this.name, this.holder, this.token).catch(() => undefined);
  }
}
