// Controller metrics on the server's /metrics registry (docs/architecture.md).
import { Counter, Histogram, type Registry } from 'prom-client';
import { JOIN_TIERS } from '../attribution/join.js';

export interface ControllerMetrics {
  commits: Counter<'author_kind'>;
  joins: Counter<'tier'>;
  commitRequests: Counter<'outcome'>;
  windowChanges: Histogram;
  windowAge: Histogram;
  requestDuration: Histogram;
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
  };
  // The tiers are a closed set: every series exists from the start (a scrape shows 0, not nothing).
  for (const tier of JOIN_TIERS) m.joins.inc({ tier }, 0);
  return m;
}
