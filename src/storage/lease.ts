// Lease and membership rules of the embedded store, as pure functions of the stored state (the
// Redis store implements the same rules in redis/lease.lua and redis/heartbeat.lua). The record
// survives release (holder '') so the fencing token never goes back: it increases by one every
// time the lease changes hands.
//
// Two kinds of lease, as etcd attaches many keys to one lease:
// - a TTL lease (epoch 0) lives until `expiresAt` and is extended by renewLease: the git engine's
//   branch lease (src/git/lease.ts), held only while a commit is written and pushed;
// - a membership lease (epoch > 0) names its holder's membership of the live replicas: it is
//   valid while that membership — the same member, with the same epoch — is live. A heartbeat
//   renews the membership alone (src/controllers/runtime/leases.ts), however many leases hang on it,
//   and a membership that expired and came back gets a new epoch, so its old leases stay dead and
//   their fencing tokens fail.

export interface LeaseState {
  holder: string;
  token: number;
  /** When a TTL lease ends (ms); unused by a membership lease. */
  expiresAt: number;
  /** The holder's membership epoch for a membership lease; 0 (or absent) for a TTL lease. */
  epoch?: number;
}

/** A live replica in the member set: until when, with which epoch, and whether it takes a share. */
export interface MemberState {
  expiresAt: number;
  epoch: number;
  share: boolean;
}

/** The epoch of `member`'s live membership, or undefined when it is not live. */
export type LiveEpoch = (member: string) => number | undefined;

/** The LiveEpoch of a member map at `now`. */
export function liveEpochOf(members: ReadonlyMap<string, MemberState>, now: number): LiveEpoch {
  return (m) => {
    const s = members.get(m);
    return s && s.expiresAt > now ? s.epoch : undefined;
  };
}

/** Held by someone: a TTL lease before its expiry, a membership lease while that membership lives. */
export function leaseHeld(cur: LeaseState | undefined, now: number, liveEpoch: LiveEpoch): boolean {
  if (cur === undefined || cur.holder === '') return false;
  if (cur.epoch) return liveEpoch(cur.holder) === cur.epoch;
  return cur.expiresAt > now;
}

/** New state when `holder` may take the TTL lease, else undefined. Re-acquiring our own lease extends it. */
export function leaseAcquire(cur: LeaseState | undefined, holder: string, ttlMs: number, now: number, liveEpoch: LiveEpoch): LeaseState | undefined {
  const held = leaseHeld(cur, now, liveEpoch);
  if (held && cur!.holder !== holder) return undefined;
  if (held) return { holder, token: cur!.token, expiresAt: now + ttlMs, epoch: 0 };
  return { holder, token: (cur?.token ?? 0) + 1, expiresAt: now + ttlMs, epoch: 0 };
}

/**
 * New state when `holder`, a live member with `epoch`, may take the membership lease, else
 * undefined: someone else holds it (a TTL lease unexpired, or a membership lease of a live
 * membership), or `holder`'s own membership with that epoch is not live.
 */
export function leaseAcquireForMember(cur: LeaseState | undefined, holder: string, epoch: number, now: number, liveEpoch: LiveEpoch): LeaseState | undefined {
  if (!(epoch > 0) || liveEpoch(holder) !== epoch) return undefined;
  const held = leaseHeld(cur, now, liveEpoch);
  if (held && cur!.holder !== holder) return undefined;
  return { holder, token: held ? cur!.token : (cur?.token ?? 0) + 1, expiresAt: 0, epoch };
}

/**
 * Still held state after a renewal by `holder` with `token`: a TTL lease is extended (even just
 * expired, if nobody took it over); a membership lease is unchanged, and held while its membership lives.
 */
export function leaseRenew(cur: LeaseState | undefined, holder: string, token: number, ttlMs: number, now: number, liveEpoch: LiveEpoch): LeaseState | undefined {
  if (!cur || cur.holder !== holder || cur.token !== token) return undefined;
  if (cur.epoch) return leaseHeld(cur, now, liveEpoch) ? cur : undefined;
  return { holder, token, expiresAt: now + ttlMs, epoch: 0 };
}

/** The fencing check: `token` is the lease's current token and the lease is held. */
export function leaseCheck(cur: LeaseState | undefined, token: number, now: number, liveEpoch: LiveEpoch): boolean {
  return cur !== undefined && cur.token === token && leaseHeld(cur, now, liveEpoch);
}

export function leaseRelease(cur: LeaseState | undefined, holder: string, token: number): LeaseState | undefined {
  if (!cur || cur.holder !== holder || cur.token !== token) return undefined;
  return { holder: '', token, expiresAt: 0, epoch: 0 };
}

/**
 * `member`'s heartbeat (the Redis store does the same in redis/heartbeat.lua): expired members
 * dropped; `member` kept until now + ttl with its epoch, or given a new one (`nextEpoch`) when it
 * was not live; or removed on leave. A member that takes a share cuts every other membership kept
 * beyond now + its ttl (a lone replica's solo TTL) back to now + ttl. Returns the live members
 * that take a share, sorted, `member`'s epoch (0 after leave), and whether the member set changed
 * (joined, left, expired or cut: the store tells the other members, Store.onMembersChanged).
 */
export function heartbeatMembers(
  members: Map<string, MemberState>,
  hb: { member: string; ttlMs: number; leave?: boolean; share?: boolean },
  now: number,
  nextEpoch: () => number,
): { members: string[]; epoch: number; changed: boolean } {
  let changed = false;
  for (const [m, s] of members) {
    if (s.expiresAt > now) continue;
    members.delete(m);
    changed = true;
  }
  let epoch = 0;
  if (hb.leave) changed = members.delete(hb.member) || changed;
  else {
    const cur = members.get(hb.member);
    if (!cur) changed = true;
    epoch = cur?.epoch ?? nextEpoch();
    const until = now + hb.ttlMs;
    members.set(hb.member, { expiresAt: until, epoch, share: hb.share !== false });
    if (hb.share !== false) {
      for (const [m, s] of members) {
        if (m === hb.member || s.expiresAt <= until) continue;
        s.expiresAt = until;
        changed = true;
      }
    }
  }
  const sharing = [...members].filter(([, s]) => s.share).map(([m]) => m);
  return { members: sharing.sort(), epoch, changed };
}
