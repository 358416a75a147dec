// Controller metrics on the server's /metrics registry (docs/architecture.md).
import { Counter, Gauge, Histogram, type Registry } from '../metrics/prom.js';
import { gitTargetLeaseName, type Informer, type LeaseKeeper } from './runtime/index.js';
import { JOIN_TIERS } from '../attribution/join.js';
import { sharedSources, type SourceHub } from './source/sources.js';
import { sharedTransports, type TransportPool } from './source/transport.js';

export interface ControllerMetrics {
  commits: Counter<'author_kind'>;
  joins: Counter<'tier'>;
  commitRequests: Counter<'outcome'>;
  windowChanges: Histogram;
  windowAge: Histogram;
  requestDuration: Histogram;
  /** Reconciles run, by controller: what a wake-up costs (a fact must wake only the GitTargets it can move). */
  reconciles: Counter<'controller'>;
}

export function createControllerMetrics(registry: Registry): ControllerMetrics {
  const m: ControllerMetrics = {
    commits: new Counter({
      name: 'reverser_commits_total',
      help: 'Commits pushed by the windows controller, by kind of author (asserted, submitter, committer, audit, unresolved).',
      labelNames: ['author_kind'],
      registers: [registry],
    }),
    joins: new Counter({
      name: 'reverser_attribution_joins_total',
      help: 'Mirrored changes of GitTargets with an audit route, by the fact tier that named their author (exact, delete_uid, deletecollection_uid, delete_name, latest_write) or unresolved.',
      labelNames: ['tier'],
      registers: [registry],
    }),
    commitRequests: new Counter({
      name: 'reverser_commitrequests_total',
      help: 'CommitRequests finished, by outcome (Committed, NothingToCommit, AlreadyPresent, Failed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    windowChanges: new Histogram({
      name: 'reverser_commit_window_changes',
      help: 'Changes in a commit window when it was committed.',
      buckets: [1, 2, 5, 10, 50, 100, 1000, 10000],
      registers: [registry],
    }),
    windowAge: new Histogram({
      name: 'reverser_commit_window_age_seconds',
      help: 'Age of a commit window (first change to close) when it closed.',
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 600],
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'reverser_commitrequest_duration_seconds',
      help: 'Time from CommitRequest creation to its outcome.',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    reconciles: new Counter({
      name: 'reverser_controller_reconciles_total',
      help: 'Reconciles run by a controller (windows), whatever their outcome.',
      labelNames: ['controller'],
      registers: [registry],
    }),
  };
  // The tiers are a closed set: every series exists from the start (a scrape shows 0, not nothing).
  for (const tier of JOIN_TIERS) m.joins.inc({ tier }, 0);
  m.reconciles.inc({ controller: 'windows' }, 0);
  return m;
}

/**
 * How this replica's share of the GitTargets looks (runtime/leases.ts, runtime/shards.ts): counts
 * only, never GitTarget names as labels. `owned` is computed at scrape time from the informer and
 * the live members; handovers are counted when the members change.
 */
export function registerReplicaMetrics(registry: Registry, keeper: LeaseKeeper, gitTargets: Informer): void {
  new Gauge({
    name: 'reverser_replicas_live',
    help: 'Replicas in the live-member set as of this replica\'s last heartbeat (this one included).',
    registers: [registry],
    collect() {
      this.set(keeper.members().length);
    },
  });
  new Gauge({
    name: 'reverser_gittargets_owned',
    help: 'GitTargets that rendezvous hashing over the live replicas gives to this replica.',
    registers: [registry],
    collect() {
      let n = 0;
      for (const gt of gitTargets.list()) if (keeper.owns(gitTargetLeaseName(gt))) n++;
      this.set(n);
    },
  });
  new Gauge({
    name: 'reverser_gittarget_leases_held',
    help: 'GitTarget leases this replica holds (a running mirror, or commit work in progress); all live with its membership, renewed by one heartbeat per interval.',
    registers: [registry],
    collect() {
      this.set(keeper.heldCount());
    },
  });
  const handovers = new Counter({
    name: 'reverser_gittarget_handovers_total',
    help: 'GitTargets whose owner changed when the live replicas changed: direction "in" became this replica\'s, "out" went to another.',
    labelNames: ['direction'],
    registers: [registry],
  });
  handovers.inc({ direction: 'in' }, 0);
  handovers.inc({ direction: 'out' }, 0);
  keeper.onRebalance((ownedBefore) => {
    for (const gt of gitTargets.list()) {
      const name = gitTargetLeaseName(gt);
      const now = keeper.owns(name);
      if (ownedBefore(name) !== now) handovers.inc({ direction: now ? 'in' : 'out' });
    }
  });
}

/**
 * What the mirror holds open towards its source clusters (source/transport.ts, source/sources.ts),
 * read at scrape time: connections per source, not per GitTarget, and watches per (type, namespace).
 */
export function registerSourceMetrics(registry: Registry, hub: SourceHub = sharedSources, pool: TransportPool = sharedTransports): void {
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(value());
      },
    });
  gauge('reverser_source_transports', 'Source transports open: one per origin, TLS trust and credentials.', () => pool.stats().transports);
  gauge('reverser_source_connections', 'HTTP/2 connections (sessions) open to source clusters.', () => pool.stats().sessions);
  gauge('reverser_source_streams', 'HTTP/2 streams open on them (watches and requests in flight).', () => pool.stats().streams);
  gauge('reverser_source_shared_watches', 'Shared watches open: one per source, type and namespace (or all namespaces).', () => hub.stats().watches);
  gauge('reverser_source_watch_subscribers', 'GitTarget streams subscribed to the shared watches.', () => hub.stats().subscribers);
}
