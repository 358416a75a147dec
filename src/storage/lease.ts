// Lease rules of the embedded store, as pure functions of the stored state (the Redis store
// implements the same rules in redis/lease.lua). The record survives release (holder '') so the
// fencing token never goes back: it increases by one every time the lease changes hands.

export interface LeaseState {
  holder: string;
  token: number;
  expiresAt: number;
}

/** New state when `holder` may take the lease, else undefined. Re-acquiring our own lease extends it. */
export function leaseAcquire(cur: LeaseState | undefined, holder: string, ttlMs: number, now: number): LeaseState | undefined {
  const held = cur !== undefined && cur.holder !== '' && cur.expiresAt > now;
  if (held && cur.holder !== holder) return undefined;
  if (held) return { holder, token: cur.token, expiresAt: now + ttlMs };
  return { holder, token: (cur?.token ?? 0) + 1, expiresAt: now + ttlMs };
}

/** Extended state while `holder` still holds `token` (even just expired, if nobody took it over). */
export function leaseRenew(cur: LeaseState | undefined, holder: string, token: number, ttlMs: number, now: number): LeaseState | undefined {
  if (!cur || cur.holder !== holder || cur.token !== token) return undefined;
  return { holder, token, expiresAt: now + ttlMs };
}

export function leaseCheck(cur: LeaseState | undefined, token: number, now: number): boolean {
  return cur !== undefined && cur.holder !== '' && cur.token === token && cur.expiresAt > now;
}

export function leaseRelease(cur: LeaseState | undefined, holder: string, token: number): LeaseState | undefined {
  if (!cur || cur.holder !== holder || cur.token !== token) return undefined;
  return { holder: '', token, expiresAt: 0 };
}

/**
 * The live members after `member`'s heartbeat (the Redis store does the same in
 * redis/heartbeat.lua): expired ones dropped, `member` kept until now + ttl, or removed on leave.
 */
export function membersAfterHeartbeat(members: Map<string, number>, member: string, ttlMs: number, now: number, leave = false): string[] {
  for (const [m, exp] of members) if (exp <= now) members.delete(m);
  if (leave) members.delete(member);
  else members.set(member, now + ttlMs);
  return [...members.keys()].sort();
}
