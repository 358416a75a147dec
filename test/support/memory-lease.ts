// An in-memory LeaseProvider for the git engine tests, until the embedded store
// (src/storage/embedded.ts) lands; it follows the Store lease contract in src/storage/types.ts.
import type { Lease } from '../../src/storage/types.js';
import type { LeaseProvider } from '../../src/git/lease.js';

export class MemoryLeases implements LeaseProvider {
  private readonly leases = new Map<string, Lease>();
  private tokens = 0;

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const cur = this.leases.get(name);
    if (cur && cur.expiresAt > Date.now() && cur.holder !== holder) return null;
    const lease = { name, holder, token: ++this.tokens, expiresAt: Date.now() + ttlMs };
    this.leases.set(name, lease);
    return { ...lease };
  }
  async renewLease(name: string, holder: string, token: number, ttlMs: number): Promise<boolean> {
    const cur = this.leases.get(name);
    if (!cur || cur.token !== token || cur.holder !== holder || cur.expiresAt <= Date.now()) return false;
    cur.expiresAt = Date.now() + ttlMs;
    return true;
  }
  async checkLease(name: string, token: number): Promise<boolean> {
    const cur = this.leases.get(name);
    return !!cur && cur.token === token && cur.expiresAt > Date.now();
  }
  async releaseLease(name: string, holder: string, token: number): Promise<void> {
    const cur = this.leases.get(name);
    if (cur && cur.token === token && cur.holder === holder) this.leases.delete(name);
  }
  /** Test hook: hand the lease to someone else, as if ours had expired and been taken. */
  steal(name: string, holder: string): void {
    this.leases.set(name, { name, holder, token: ++this.tokens, expiresAt: Date.now() + 60_000 });
  }
  names(): string[] {
    return [...this.leases.keys()];
  }
}
