// The controllers that run inside the server process (docs/architecture.md), started by serve() after the
// API listens. Each reads our objects from the Store (informers), writes their status through the
// registry as the system identity (client.ts), and commits through the git engine worker; `--controllers` picks which run (a replica may run API-only).
import type { Registry as MetricsRegistry } from 'prom-client';
import type { CommitEngine, ObjectRef } from '../git/index.js';
import type { Logger } from '../metrics/logger.js';
import type { Store } from '../storage/types.js';
import { CommitRequestController } from './commitrequests/controller.js';
import { createControllerMetrics, registerReplicaMetrics, registerSourceMetrics } from './metrics.js';
import { Informer, LeaseKeeper, type Clock } from './runtime/index.js';
import { GITTARGETS, WindowsController } from './windows/controller.js';
import { secretCredentials } from './windows/credentials.js';
import { isSuspended, repositoryOf } from './windows/decisions.js';
import type { KubeObject } from '../storage/types.js';
import type { GitCredentials } from '../git/repository-url.js';
import type { TargetKey, WindowSink } from './windows/types.js';
import type { ControllerName } from './names.js';
import { SystemClient, type RequestMetrics } from './client.js';
import type { Registries } from '../registry/registries.js';
import type { KubeConfig } from '../kubeconfig/kubeconfig.js';
import type { AttributionConfig } from '../attribution/join.js';
import type { EventRecorder } from './events/recorder.js';
import type { GitTargetSpec } from '../api/gittarget.js';
import { EgressPolicy, type EgressOptions } from '../net/egress.js';
import type { Authorizer } from '../auth/types.js';
import { AuthorityVerifier } from './authority/verifier.js';

export { CONTROLLER_NAMES, parseControllers, type ControllerName } from './names.js';

export interface ControllerDeps {
  store: Store;
  log: Logger;
  /** The git engine (the worker in a server). */
  engine: () => Promise<CommitEngine>;
  committer: { name: string; email: string };
  metrics?: MetricsRegistry;
  /** Lease holder id of this replica (default hostname/pid/random). */
  holder?: string;
  leaseTtlMs?: number;
  /** How often the replica heartbeat renews its membership, which every held lease lives with (--replica-heartbeat-interval; default leaseTtlMs / 3). */
  heartbeatMs?: number;
  /** The membership TTL while this replica is the only live one (--replica-solo-lease-ttl; default here leaseTtlMs, no difference; the server's flag defaults to 2 min). */
  soloLeaseTtlMs?: number;
  requestGraceMs?: number;
  /** The mirror's default source cluster (--kubeconfig, in-cluster, or the sandbox); also where kubeconfig Secrets are read. */
  defaultSource?: KubeConfig;
  /** kcp's base URL (--kcp-server-url): a GitTarget in logical cluster X mirrors `<url>/clusters/X`; default: defaultSource's server. */
  kcpServerURL?: string;
  /**
   * The default source is a hosting cluster (kcp), not this server's own sandbox: a GitTarget in a
   * logical cluster then reads its git credentials Secret from its workspace, not from the store.
   */
  workspaceSecrets?: boolean;
  /** How often the mirror re-checks a target (kubeconfig Secret re-read); default 10 s. */
  mirrorRecheckMs?: number;
  /** The windows controller's check for pending changes no reconcile looks at (windows/resync.ts; tests shorten it). */
  windowsResyncMs?: number;
  /** Per-edit attribution: the audit facts, whether the audit listener runs, the graces. */
  attribution?: AttributionConfig;
  /** --allow-insecure-credentials, --allow-file-repositories and the --egress-* policy (kubeconfig Secrets; the git engine gets its own copy). */
  tenantInput?: { allowInsecureCredentials?: boolean; allowFileRepositories?: boolean; egress?: EgressOptions };
  /** The server's registries: controllers write status through them as the system identity (default: registries over `store`). */
  registries?: Registries;
  /** The API's request metrics, where controllers' writes are counted as a client's would be. */
  requestMetrics?: RequestMetrics;
  /** Kubernetes Events about GitTargets and CommitRequests (src/controllers/events/); none when absent. */
  events?: EventRecorder;
  /**
   * Re-verification of the authority GitTargets run under: the server's authorizer and the pass
   * interval (--authority-reverify-interval). Without it (tests of the controllers alone) the
   * mirror does not gate on authority.
   */
  authority?: { authorizer: Authorizer; intervalMs: number };
  /**
   * The time commit windows open, close, requeue and back off by (default: the wall clock); tests
   * pass test/support/clock.ts ManualClock. Leases keep the wall clock: their TTLs run in the Store.
   */
  clock?: Clock;
}

export interface RunningControllers {
  /** Shared by every controller of this replica: one lease per GitTarget. */
  keeper: LeaseKeeper;
  /** Where the mirror adds changes (undefined when the windows controller does not run here). */
  sink: WindowSink | undefined;
  gitTargets: Informer;
  authority: AuthorityVerifier | undefined;
  /** A GitTarget-shaped object's git credentials, from where this replica reads them (store, hosting cluster, kcp workspace). */
  credentials: (obj: KubeObject) => Promise<GitCredentials | undefined>;
  stop(): Promise<void>;
}

export async function startControllers(deps: ControllerDeps, enabled: Set<ControllerName>): Promise<RunningControllers> {
  const keeper = new LeaseKeeper(deps.store, { holder: deps.holder, ttlMs: deps.leaseTtlMs, heartbeatMs: deps.heartbeatMs, soloTtlMs: deps.soloLeaseTtlMs, member: enabled.has('windows'), log: deps.log });
  // Join the live replicas first: which GitTargets are this replica's is known before any controller asks.
  await keeper.start();
  const gitTargets = new Informer(deps.store, GITTARGETS, { log: deps.log });
  const metrics = deps.metrics ? createControllerMetrics(deps.metrics) : undefined;
  if (deps.metrics) {
    registerReplicaMetrics(deps.metrics, keeper, gitTargets);
    registerSourceMetrics(deps.metrics);
  }
  const client = deps.registries ? new SystemClient(deps.registries, deps.requestMetrics) : SystemClient.forStore(deps.store, deps.requestMetrics);
  const stops: Array<() => Promise<void>> = [];
  const startAfterInformer: Array<() => Promise<void>> = [];
  let sink: WindowSink | undefined;
  let windows: WindowsController | undefined;
  // Where GitTargets' sources and Secrets are (per logical cluster); shared by the mirror and the windows' git credentials.
  const source = enabled.has('mirror') || deps.workspaceSecrets ? await import('./source/index.js') : undefined;
  const tenantInput = deps.tenantInput ?? {};
  const vet = { allowInsecureCredentials: tenantInput.allowInsecureCredentials, egress: new EgressPolicy(tenantInput.egress) };
  const connector = source && new source.SourceConnector({ defaultConfig: deps.defaultSource, kcpServerURL: deps.kcpServerURL, vet });
  // Git credentials Secrets: the store's, or a kcp GitTarget's own workspace's (the windows' commits and the mirror's folder listing).
  const fromStore = secretCredentials(deps.store);
  const credentials = connector && deps.workspaceSecrets && deps.defaultSource ? source!.workspaceGitCredentials(connector, fromStore) : fromStore;
  if (enabled.has('windows')) {
    // The worker (a thread with isomorphic-git: tens of MiB) of a GitTarget's repository starts
    // when the GitTarget is created (or resumed) not suspended while the server runs, rather than
    // on its first commit (loading it took ~0.7 s of the first snapshot's time); a server with
    // nothing to commit does not hold it. The GitTargets a restart finds (the informer's first
    // list) do not start it: their mirrors re-list with nothing to commit unless the source
    // changed meanwhile, and a worker loading its modules beside the restart's own work delayed
    // /readyz (`npm run bench -- peer`). Status writes leave it alone too. A change or a snapshot
    // reaching a window starts it (windows/sink.ts onAdd), while the window waits out its idle time.
    const engine = await deps.engine();
    gitTargets.on({
      upsert: (o, old) => {
        if (gitTargets.hasSynced && !isSuspended(o) && (!old || isSuspended(old))) engine.warm?.(repositoryOf(o));
      },
    });
    windows = new WindowsController({ store: deps.store, client, engine, keeper, committer: deps.committer, gitTargets, log: deps.log, metrics, credentials, attribution: deps.attribution, events: deps.events, clock: deps.clock, resyncMs: deps.windowsResyncMs });
    sink = windows.sink;
    stops.push(() => windows!.stop());
  }
  let requests: CommitRequestController | undefined;
  let verifier: AuthorityVerifier | undefined;
  if (enabled.has('commitrequests')) {
    const { WindowRecords } = await import('./windows/record.js');
    requests = new CommitRequestController({ store: deps.store, client, records: windows?.records ?? new WindowRecords(deps.store), gitTargets, log: deps.log, metrics, requestGraceMs: deps.requestGraceMs, events: deps.events });
    stops.push(() => requests!.stop());
  }
  if (enabled.has('mirror')) {
    if (!sink) throw new Error('the mirror controller needs the windows controller in the same replica (--controllers)');
    const { startMirror } = await import('./mirror/index.js');
    const mirrorSink = sink;
    const mirrorConnector = connector!;
    const engine = await deps.engine();
    // prune Always: what the target's folder holds at its branch head, read by the git worker.
    const folderListing = async (key: TargetKey): Promise<ObjectRef[] | undefined> => {
      const gt = gitTargets.get(`${key.cluster}/${key.namespace}/${key.name}`);
      if (!gt || gt.metadata.uid !== key.uid || !engine.listFolder) return undefined;
      const spec = gt.spec as GitTargetSpec; // stored objects were validated against its schema
      return engine.listFolder({ repository: { url: spec.repository.url, credentials: await credentials(gt), tenant: { cluster: key.cluster, namespace: key.namespace } }, branch: spec.branch, folder: spec.path });
    };
    const authority = deps.authority ? new AuthorityVerifier({ ...deps.authority, gitTargets, log: deps.log }) : undefined;
    verifier = authority;
    let mirror: Awaited<ReturnType<typeof startMirror>> | undefined;
    // Started after the shared informer below; stopped before it.
    startAfterInformer.push(async () => {
      const allow = { fileRepositories: tenantInput.allowFileRepositories, insecureCredentials: tenantInput.allowInsecureCredentials };
      mirror = await startMirror({ store: deps.store, client, log: deps.log, keeper, sink: mirrorSink, connector: mirrorConnector, gitTargets, recheckMs: deps.mirrorRecheckMs, folderListing, allow, authority, events: deps.events });
      authority?.start();
    });
    stops.unshift(async () => {
      await authority?.stop();
      await mirror?.stop();
    });
  }
  await windows?.start();
  await gitTargets.start();
  for (const s of startAfterInformer) await s();
  await requests?.start();
  if (enabled.size) deps.log.info('controllers started', { controllers: [...enabled], holder: keeper.holder, replicas: keeper.members().length });
  return {
    keeper,
    sink,
    gitTargets,
    authority: verifier,
    credentials,
    async stop() {
      gitTargets.stop();
      for (const s of stops) await s();
      connector?.close();
      await keeper.stop();
    },
  };
}
