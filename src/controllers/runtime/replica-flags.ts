// Flags of how replicas share the GitTargets (runtime/leases.ts): the lease TTL and the heartbeat
// interval. Parsed here so src/cli/options.ts only lists them; no imports, so parsing flags loads
// nothing of the controllers.

export interface ReplicaOptions {
  /** A GitTarget lease's and a replica's membership TTL (ms). */
  leaseTtlMs: number;
  /** How often one heartbeat renews the membership, which every held GitTarget lease lives with (ms). */
  heartbeatMs: number;
  /** The membership TTL of a replica whose last heartbeat found no other replica (ms; leases.ts soloTtlMs). */
  soloLeaseTtlMs: number;
}

export const REPLICA_FLAGS = [
  {
    name: 'replica-lease-ttl',
    description:
      "How long a replica's GitTarget leases and its place among the live replicas last without a heartbeat (Go duration, 1s..5m). A replica that dies hands its GitTargets over within this TTL plus one heartbeat interval.",
    default: '10s',
  },
  {
    name: 'replica-heartbeat-interval',
    description:
      'How often a replica renews its membership of the live replicas, which every GitTarget lease it holds lives with, in one store operation (Go duration; default a third of --replica-lease-ttl; at most half of it).',
    default: '',
  },
  {
    name: 'replica-solo-lease-ttl',
    description:
      'The membership TTL of a replica while it is the only live one (Go duration, from --replica-lease-ttl to 5m; default 2m, or --replica-lease-ttl when that is longer). A lone replica renews in the same proportion less often (every 40 s at the defaults instead of every 3.3 s): CPU at rest. Failover does not wait for it: a replica that joins cuts a longer membership back to --replica-lease-ttl, and the lone replica, told at once, renews for that TTL.',
    default: '2m',
  },
];

export class ReplicaFlagError extends Error {}

export function parseReplicaFlags(values: Record<string, string | undefined>, parseDuration: (s: string) => number | undefined): ReplicaOptions {
  const ttlText = values['replica-lease-ttl'] ?? '10s';
  const leaseTtlMs = parseDuration(ttlText);
  if (leaseTtlMs === undefined || leaseTtlMs < 1_000 || leaseTtlMs > 300_000) {
    throw new ReplicaFlagError(`--replica-lease-ttl: must be a duration between 1s and 5m (e.g. 10s), got ${JSON.stringify(ttlText)}`);
  }
  // The default follows a longer --replica-lease-ttl; a joiner cuts it back to the TTL in any case
  // (redis/heartbeat.lua), so a takeover never waits for it (test/controllers/crash.test.ts).
  const soloText = values['replica-solo-lease-ttl'] ?? '';
  const soloLeaseTtlMs = soloText === '' ? Math.max(leaseTtlMs, 120_000) : parseDuration(soloText);
  if (soloLeaseTtlMs === undefined || soloLeaseTtlMs < leaseTtlMs || soloLeaseTtlMs > 300_000) {
    throw new ReplicaFlagError(`--replica-solo-lease-ttl: must be a duration between --replica-lease-ttl (${leaseTtlMs / 1000}s) and 5m (e.g. 60s), got ${JSON.stringify(soloText)}`);
  }
  const hbText = values['replica-heartbeat-interval'] ?? '';
  if (hbText === '') return { leaseTtlMs, heartbeatMs: Math.floor(leaseTtlMs / 3), soloLeaseTtlMs };
  const heartbeatMs = parseDuration(hbText);
  // At most half the TTL: a lease must survive one late heartbeat.
  if (heartbeatMs === undefined || heartbeatMs < 100 || heartbeatMs > leaseTtlMs / 2) {
    throw new ReplicaFlagError(`--replica-heartbeat-interval: must be a duration between 100ms and half of --replica-lease-ttl (${leaseTtlMs / 2000}s), got ${JSON.stringify(hbText)}`);
  }
  return { leaseTtlMs, heartbeatMs, soloLeaseTtlMs };
}
