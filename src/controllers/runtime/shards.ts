// Which live replica owns a GitTarget: rendezvous (highest-random-weight) hashing of the target's
// lease name over the live members (src/controllers/runtime/leases.ts keeps the member list).
// Every replica computes the same owner from the same member list, with no coordination. When a
// member joins, it takes about 1/N of every other member's targets and nothing else moves; when one
// leaves or dies, only its own targets move, spread over the others. Each target is placed
// independently, so shares are binomial: with n targets and N members a share's standard deviation
// is sqrt(n·(1/N)·(1-1/N)): 3,000 over 3 gives 1,000 ± 26 (a share leaves ±10% at 3.9σ), while
// 300 over 3 gives 100 ± 8 (±10% is only 1.2σ). docs/architecture.md "Replicas" has the numbers.
// Exclusivity does not depend on the views agreeing: a replica still needs the target's lease.
import { createHash } from 'node:crypto';

/** The weight of `member` for `name`: 48 bits of sha256, uniform and independent per pair. */
function weight(member: string, name: string): number {
  return parseInt(createHash('sha256').update(member).update('\0').update(name).digest('hex').slice(0, 12), 16);
}

/** The owner of `name` among `members` (undefined when there are none). */
export function ownerOf(name: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const m of members) {
    const w = weight(m, name);
    // Ties (1 in 2^48) go to the smaller member id, the same on every replica.
    if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  return best;
}
