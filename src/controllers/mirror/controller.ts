// The mirror controller: one TargetMirror per GitTarget this replica holds the lease of. A key is
// reconciled on every change of its GitTarget, and on a short cadence only when it reads a
// kubeconfig Secret (re-read then): a target at rest on the default source costs nothing periodic.
// The TargetMirror is replaced when the generation, the source credentials (a rotation: the client
// is rebuilt once per new kubeconfig) or the lease change, and stopped when the GitTarget is
// deleted or suspended, its Secret deleted or refused, or the lease lost.
import type { Store } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';
import type { ObjectRef } from '../../git/index.js';
import { Informer, WorkQueue, clusterOf, keyOf, movedKeys, parseKey, targetLeaseName, type LeaseKeeper } from '../runtime/index.js';
import type { TargetKey, WindowSink } from '../windows/types.js';
import type { Connection, SourceConnector, SourceSpec } from '../source/connector.js';
import type { ReflectorOptions } from '../source/reflector.js';
import type { SourceHub } from '../source/sources.js';
import type { SourceError } from '../source/client.js';
import { NOTHING_TO_MIRROR, TargetMirror, type MirrorReport, type MirrorSpec, type PruneMode } from './target.js';
import { mergeStatus, writeMirrorStatus, type MirrorStatus } from './status.js';
import { getCondition } from '../status.js';
import { destinationRefusal } from '../../model/destination.js';
import { SystemClient } from '../client.js';
import type { EventRecorder } from '../events/recorder.js';
import { authorityRevoked } from '../events/index.js';
import { PathClaims } from './path-claims.js';
import type { AuthorityVerifier } from '../authority/verifier.js';

export interface MirrorDeps {
  store: Store;
  /** Status writes go through the registry as the system identity; default: a client over `store`. */
  client?: SystemClient;
  log: Logger;
  keeper: LeaseKeeper;
  sink: WindowSink;
  connector: SourceConnector;
  /** Identities of the files in a target's folder (prune Always); from the git engine. */
  folderListing?(key: TargetKey): Promise<ObjectRef[] | undefined>;
  /** The replica's shared GitTarget informer (started by the caller); the mirror makes its own when absent. */
  gitTargets?: Informer;
  /** How often a held target is re-checked (kubeconfig Secret re-read). Default 10 s. */
  recheckMs?: number;
  reflector?: ReflectorOptions;
  /** Where source connections, discovery and watches are shared; default: the process's hub (source/sources.ts). */
  sources?: SourceHub;
  /** Kubernetes Events (SourceUnreachable); none when absent. */
  events?: EventRecorder;
  /** What a destination may be on this server (--allow-file-repositories, --allow-insecure-credentials). */
  allow?: { fileRepositories?: boolean; insecureCredentials?: boolean };
  /** Whose authority each GitTarget reads with, re-verified (the server always passes it; tests of the mirror alone may not). */
  authority?: AuthorityVerifier;
}

interface Running {
  uid: string;
  generation: number;
  token: string;
  description: string;
  mirror: TargetMirror;
  report?: MirrorReport;
  /** Date.now() when this mirror started (FIRST_STATUS_MS). */
  startedAt: number;
}

/** Stream state changes come in bursts (every stream of a target at once): one write per this many ms. */
const STATUS_COALESCE_MS = 100;

/**
 * How long a mirror just started waits for its streams' first lists before its first status
 * write. Written at once, it said Connecting, and the lists a few tens of ms later made a second
 * write: one status write per new GitTarget (of 5) for a state no client acts on. A source slower
 * than this gets its Connecting status at FIRST_STATUS_MS; an error or a refused type at once.
 */
export const FIRST_STATUS_MS = 2_000;

/** A report's status write that failed is tried again by a reconcile after this long. */
const STATUS_RETRY_MS = 1_000;

/** When a running mirror's report is written: soon, unless its streams are still making their first lists. */
function statusDelayMs(r: Running, now: number): number {
  const rep = r.report;
  const listing = rep !== undefined && !rep.sourceError && !rep.unresolved?.length && rep.streamsReady < rep.streamsTotal;
  return listing ? Math.max(STATUS_COALESCE_MS, r.startedAt + FIRST_STATUS_MS - now) : STATUS_COALESCE_MS;
}

/**
 * GitTargets reconciled at once. A reconcile mostly waits (the lease, discovery, the status write's
 * store round trips); one at a time, a thousand new GitTargets queued behind each other's round
 * trips (bench/scale). One key still runs once at a time (runtime/queue.ts).
 */
export const MIRROR_CONCURRENCY = 32;

/** This controller's claim on a GitTarget's lease (shared with the windows controller). */
const CLAIMANT = 'mirror';

const REACHABILITY: Record<string, string> = { Unreachable: 'Unreachable', AuthenticationFailed: 'AuthenticationFailed', AccessDenied: 'AccessDenied', EgressDenied: 'EgressDenied' };

function mirrorSpec(spec: any): MirrorSpec {
  const prune: PruneMode = ['Never', 'OnEvent', 'Always'].includes(spec?.prune?.mode) ? spec.prune.mode : spec?.prune?.mode === undefined ? 'OnEvent' : 'Never';
  return {
    resources: Array.isArray(spec?.resources) ? spec.resources : [],
    prune,
    includeClusterNoise: spec?.includeClusterNoise === true,
  };
}

/** The conditions a running mirror's last report means. */
export function statusFromReport(generation: number, description: string, r: MirrorReport | undefined): MirrorStatus {
  const streams = { ready: r?.streamsReady ?? 0, total: r?.streamsTotal ?? 0 };
  if (r?.unresolved?.length) {
    return {
      generation,
      validated: { status: 'False', reason: 'ResourceTypeNotFound', message: r.unresolved.join('; ') },
      sourceReachable: { status: 'True', reason: 'Reachable', message: `${description} answers discovery` },
      synced: { status: 'False', reason: 'NotStarted', message: 'nothing is mirrored until every selected type resolves' },
      streams,
    };
  }
  const err: SourceError | undefined = r?.sourceError;
  const validated = { status: 'True' as const, reason: 'Valid', message: `mirroring from ${description}` };
  const sourceReachable = err
    ? { status: 'False' as const, reason: REACHABILITY[err.reason] ?? 'Unreachable', message: err.message }
    : r && r.unresolved && streams.ready === streams.total
      ? { status: 'True' as const, reason: 'Reachable', message: `${streams.ready}/${streams.total} streams listed and watching` }
      : { status: 'Unknown' as const, reason: 'Connecting', message: 'listing the selected types' };
  return { generation, validated, sourceReachable, synced: r?.synced ?? { status: 'False', reason: 'InitialSync', message: 'waiting for the initial list' }, streams };
}

/** The GitTarget reads its source's credentials from a kubeconfig Secret (re-read every recheck). */
function usesSecret(spec: any): boolean {
  return spec?.source?.kubeConfig?.secretRef !== undefined;
}

export interface MirrorController {
  stop(): Promise<void>;
  /** Resolves once every GitTarget seen so far was reconciled at least once (tests). */
  idle(): Promise<void>;
}

export async function startMirror(deps: MirrorDeps): Promise<MirrorController> {
  const { store, log, keeper, sink, connector } = deps;
  const client = deps.client ?? SystemClient.forStore(store);
  const recheckMs = deps.recheckMs ?? 10_000;
  const running = new Map<string, Running>();
  const claims = new PathClaims();
  const pendingStatus = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  const ownInformer = !deps.gitTargets;
  const informer = deps.gitTargets ?? new Informer(store, { group: 'configbutler.ai', resource: 'gittargets' }, { log });

  /** Stops the target's mirror; `keepLease` when it restarts at once (new generation or credentials). */
  const teardown = async (key: string, keepLease = false) => {
    const r = running.get(key);
    if (!r) return;
    running.delete(key);
    await r.mirror.stop();
    log.info('mirror stopped', { target: key });
    if (!keepLease) await keeper.release(targetLeaseName({ ...parseKey(key), uid: r.uid }), CLAIMANT);
  };

  const writeStatusNow = async (key: string, uid: string, s: MirrorStatus) => {
    // Compared with the informer's copy first: a status that would not change costs no store read
    // (a consistent read is a Redis round trip). A stale copy is safe: the newer version's event
    // reconciles the key again, and that compares with it.
    const cached = informer.get(key);
    if (cached?.metadata.uid === uid && mergeStatus(cached, s, '') === undefined) return;
    return writeMirrorStatus(client, parseKey(key), uid, s, deps.events);
  };

  // One status write at a time per GitTarget, in the order they were computed: the reconcile's and
  // the stream timer's (scheduleStatus) ran side by side and each made the other's compare-and-swap
  // fail (at 10,000 new GitTargets, more conflicts than GitTargets; each retry is a read, a
  // validation and a write again).
  // A write that fails rejects: a reconcile's fails the reconcile (the queue retries it with
  // backoff), a report's is retried by a reconcile after STATUS_RETRY_MS. Logged and dropped, a
  // failed write (a 503 under load) left the status as it was until the next report, which a
  // mirror at rest never makes (at 10,000 tenants one GitTarget stayed Connecting, bench/scale).
  const statusWrites = new Map<string, Promise<void>>();
  const writeStatus = (key: string, uid: string, s: MirrorStatus): Promise<void> => {
    const run = (statusWrites.get(key) ?? Promise.resolve()).then(() => writeStatusNow(key, uid, s));
    const settled = run.catch(() => undefined);
    statusWrites.set(key, settled);
    void settled.then(() => statusWrites.get(key) === settled && statusWrites.delete(key));
    return run;
  };

  // One write per burst of reports, at statusDelayMs: a later report never postpones a write
  // already due, and one that wants it sooner (the lists done, an error) brings it forward.
  const scheduleStatus = (key: string, delayMs: number) => {
    const due = Date.now() + delayMs;
    const pending = pendingStatus.get(key);
    if (pending && pending.due <= due) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      pendingStatus.delete(key);
      const r = running.get(key);
      if (!r) return;
      writeStatus(key, r.uid, statusFromReport(r.generation, r.description, r.report)).catch((e) => {
        log.warn('status write failed; retried by a reconcile', { target: key, retryInMs: STATUS_RETRY_MS, error: (e as Error).message });
        queue.addAfter(key, STATUS_RETRY_MS);
      });
    }, delayMs);
    pendingStatus.set(key, { timer, due });
  };

  const reconcile = async (key: string) => {
    const obj = informer.get(key);
    if (!obj || obj.metadata.deletionTimestamp) {
      await teardown(key);
      return;
    }
    const { namespace, name } = parseKey(key);
    const uid = obj.metadata.uid ?? '';
    const generation = obj.metadata.generation ?? 1;
    const tk: TargetKey = { cluster: parseKey(key).cluster, namespace, name, uid };
    const cur = running.get(key);
    if (cur && cur.uid !== uid) await teardown(key);
    const spec = obj.spec as any;
    if (!Array.isArray(spec?.resources) || spec.resources.length === 0) {
      // Nothing selected, nothing to mirror: the mirror never connects, and says so (Ready with
      // reason NothingToMirror), so `kubectl wait` and a CommitRequest get an answer. The status is
      // the same from every replica, so it is written without the lease.
      await teardown(key);
      const none = { status: 'True' as const, reason: NOTHING_TO_MIRROR, message: 'spec.resources is empty: nothing is read from the source, mirrored or committed' };
      await writeStatus(key, uid, {
        generation,
        validated: { status: 'True', reason: 'Valid', message: 'spec.resources selects nothing' },
        sourceReachable: { status: 'True', reason: 'NotNeeded', message: 'nothing is read from the source' },
        synced: none,
        streams: { ready: 0, total: 0 },
        suspended: spec?.suspend === true,
      });
      return;
    }
    const conflict = claims.conflictFor(key);
    if (conflict) {
      // One folder, one GitTarget: the losing claim neither mirrors nor commits (path-claims.ts).
      await teardown(key);
      const idle = { status: 'Unknown' as const, reason: 'NotChecked', message: 'the source was not checked' };
      await writeStatus(key, uid, {
        generation,
        validated: { status: 'False', reason: 'PathConflict', message: conflict.message },
        sourceReachable: idle,
        synced: { status: 'False', reason: 'NotStarted', message: 'nothing is mirrored while another GitTarget owns the folder' },
        streams: { ready: 0, total: 0 },
      });
      return;
    }
    const ready = getCondition(obj, 'Ready');
    if (spec?.suspend === true && !running.has(key) && ready?.reason === 'Suspended' && ready.observedGeneration === generation) return; // already reported
    const lease = await keeper.acquire(targetLeaseName(tk), CLAIMANT);
    if (!lease) {
      await teardown(key);
      // Another replica's target (runtime/shards.ts) waits for a rebalance, not a timer; our own,
      // still held by its previous owner, is tried again until that one lets go or expires.
      return keeper.owns(targetLeaseName(tk)) ? { requeueAfterMs: 2_000 } : undefined;
    }
    const idle = { status: 'Unknown' as const, reason: 'NotChecked', message: 'the source was not checked' };
    if (spec?.suspend === true) {
      const synced = running.get(key)?.report?.synced ?? idle;
      await teardown(key);
      await writeStatus(key, uid, { generation, validated: idle, sourceReachable: idle, synced, streams: { ready: 0, total: 0 }, suspended: true });
      // A suspended target needs no lease: holding it would keep it from its owner for nothing.
      await keeper.release(targetLeaseName(tk), CLAIMANT);
      return;
    }
    // Never read on a grant that is gone or unconfirmed (src/controllers/authority/verifier.ts).
    const authority = deps.authority?.verdict(key, obj);
    if (authority && !authority.ok && authority.pending && !running.has(key)) return { requeueAfterMs: 1_000 };
    if (authority && !authority.ok) {
      if (running.has(key)) {
        log.warn('authority gone; the mirror stops', { target: key, reason: authority.reason });
        // An Event once, when a running mirror stops for it (the correlator merges repeats).
        if (deps.events) authorityRevoked(deps.events, obj, `${authority.reason}: ${authority.message}`);
      }
      await teardown(key);
      await writeStatus(key, uid, {
        generation,
        validated: { status: 'False', reason: authority.reason, message: authority.message },
        sourceReachable: idle,
        synced: { status: 'False', reason: 'NotStarted', message: 'nothing is mirrored without a verified authority' },
        streams: { ready: 0, total: 0 },
      });
      return { requeueAfterMs: recheckMs };
    }
    // A destination this server refuses is reported like a refused source: nothing is mirrored for it.
    const refused = destinationRefusal(spec?.repository, deps.allow ?? {});
    const conn: Connection = refused ? { ok: false, ...refused } : await connector.connect(namespace, spec?.source as SourceSpec | undefined, tk.cluster);
    if (!conn.ok && conn.transient && running.get(key)?.uid === uid && running.get(key)?.generation === generation) {
      // The hosting cluster could not be asked about the Secret: keep mirroring with what we have.
      log.warn('kubeconfig Secret not re-checked; the mirror keeps its credentials', { target: key, reason: conn.reason });
      return { requeueAfterMs: recheckMs };
    }
    if (!conn.ok) {
      await teardown(key);
      await writeStatus(key, uid, {
        generation,
        validated: { status: conn.transient ? 'Unknown' : 'False', reason: conn.reason, message: conn.message },
        sourceReachable: idle,
        synced: { status: 'False', reason: 'NotStarted', message: 'nothing is mirrored while the source is refused' },
        streams: { ready: 0, total: 0 },
      });
      return { requeueAfterMs: recheckMs };
    }
    const now = running.get(key);
    if (now && (now.generation !== generation || now.token !== conn.token)) {
      log.info(now.token !== conn.token ? 'source credentials changed; rebuilding the client' : 'spec changed; restarting the mirror', { target: key });
      await teardown(key, true);
    }
    const starting = !running.has(key);
    if (starting) {
      const entry: Running = {
        uid,
        generation,
        token: conn.token,
        description: conn.description,
        mirror: undefined as unknown as TargetMirror,
        startedAt: Date.now(),
      };
      entry.mirror = new TargetMirror({
        key: tk,
        generation,
        spec: mirrorSpec(spec),
        config: conn.config,
        sourceToken: conn.token,
        sink,
        log,
        folderListing: deps.folderListing,
        reflector: deps.reflector,
        sources: deps.sources,
        onReport: (rep) => {
          if (running.get(key) !== entry) return;
          entry.report = rep;
          scheduleStatus(key, statusDelayMs(entry, Date.now()));
        },
      });
      running.set(key, entry);
      log.info('mirror started', { target: key, source: conn.description, generation });
      await entry.mirror.start();
    }
    // A mirror started here reports as it lists (onReport above schedules its first write); one
    // already running is written now (the key was reconciled for a reason: a lease, an authority).
    const r = running.get(key);
    if (r && !starting) await writeStatus(key, uid, statusFromReport(r.generation, r.description, r.report));
    // Only a kubeconfig Secret can change without an event reaching this controller (it is read
    // uncached, source/connector.ts): a target on the default source is not looked at again until
    // its GitTarget, its authority (authority/verifier.ts onChange) or its lease changes.
    return usesSecret(spec) ? { requeueAfterMs: recheckMs } : undefined;
  };

  const queue = new WorkQueue(reconcile, { name: 'mirror', concurrency: MIRROR_CONCURRENCY, log });
  deps.authority?.onChange((key) => queue.add(key));
  informer.on({
    upsert: (o) => {
      const key = keyOf(o, clusterOf(o));
      for (const k of claims.upsert(o)) queue.add(k);
      queue.add(key);
    },
    delete: (o) => {
      const key = keyOf(o, clusterOf(o));
      for (const k of claims.remove(key)) queue.add(k);
      queue.add(key);
    },
  });
  // The live replicas changed: the targets that became ours start, those that are no longer ours stop.
  keeper.onRebalance((ownedBefore) => {
    for (const key of movedKeys(informer.list(), ownedBefore, (n) => keeper.owns(n))) queue.add(key);
  });
  keeper.onLost((lease) => {
    for (const [key, r] of running) {
      const { cluster, namespace, name } = parseKey(key);
      if (targetLeaseName({ cluster, namespace, name, uid: r.uid }) === lease) {
        void teardown(key).then(() => queue.add(key));
      }
    }
  });
  if (ownInformer) await informer.start();
  else
    for (const o of informer.list()) {
      claims.upsert(o);
      queue.add(keyOf(o, clusterOf(o)));
    }

  return {
    async stop() {
      // Not awaited (as before lint): a reconcile in flight may be waiting on its source; the
      // teardowns below end its streams.
      void queue.stop();
      if (ownInformer) informer.stop();
      for (const p of pendingStatus.values()) clearTimeout(p.timer);
      await Promise.all([...running.keys()].map((k) => teardown(k)));
    },
    idle: () => queue.drained(),
  };
}
