// The CommitRequest controller. The API accepts a request at once (no Git work on the request
// path); this controller then
// 1. fails it at once when its GitTarget is missing or not Ready (naming it);
// 2. attaches it to the GitTarget's open window if it may claim it — an unattributed window, or the
//    audited window of its own submitter — or queues it to claim the next such window within
//    closeDelaySeconds; one compare-and-swap of the window record, with its message and author;
// 3. writes the outcome the windows controller recorded (Committed, AlreadyPresent,
//    NothingToCommit, Failed) into the request's status, then forgets it in the record;
// 4. fails it when it did not finish within closeDelaySeconds + a bounded grace;
// 5. deletes it ttlSecondsAfterFinished after it finished.
// The request's status is written only here; every step is idempotent, so replicas may race.
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject, Store } from '../../storage/types.js';
import { Informer, WorkQueue, clusterOf, keyOf, type QueueResult } from '../runtime/index.js';
import type { ControllerMetrics } from '../metrics.js';
import { getCondition, setCondition, updateStatus, type Condition } from '../status.js';
import { SystemClient } from '../client.js';
import { mayClaim, openWindow } from '../windows/policy.js';
import { unchanged, WINDOWS_RESOURCE, type RequestOutcome, type WindowRecords } from '../windows/record.js';
import type { TargetKey } from '../windows/types.js';
import { GITTARGETS } from '../windows/controller.js';
import { authorshipOf } from './authorship.js';

export const COMMITREQUESTS = { group: 'configbutler.ai', resource: 'commitrequests' };
/** How long past its close delay a request may take before it fails (commit and push retries included). */
export const DEFAULT_REQUEST_GRACE_MS = 120_000;
/** How often a request whose GitTarget has no status yet looks again. */
const NO_STATUS_RECHECK_MS = 500;
const DEFAULT_TTL_SECONDS = 3600;

export interface CommitRequestControllerDeps {
  store: Store;
  /** Status writes go through the registry as the system identity; default: a client over `store`. */
  client?: SystemClient;
  records: WindowRecords;
  gitTargets: Informer;
  log: Logger;
  metrics?: ControllerMetrics;
  requestGraceMs?: number;
}

interface Spec {
  targetRef: { name: string };
  message: string;
  closeDelaySeconds?: number;
  ttlSecondsAfterFinished?: number;
}

const TERMINAL = new Set(['Committed', 'NothingToCommit', 'AlreadyPresent', 'Failed']);

export function isFinished(cr: KubeObject): boolean {
  const r = getCondition(cr, 'Ready');
  return r !== undefined && TERMINAL.has(r.reason);
}

export class CommitRequestController {
  private readonly requests: Informer;
  private readonly windows: Informer;
  private readonly queue: WorkQueue;

  constructor(private readonly deps: CommitRequestControllerDeps) {
    this.requests = new Informer(deps.store, COMMITREQUESTS, { log: deps.log });
    this.windows = new Informer(deps.store, WINDOWS_RESOURCE, { log: deps.log });
    this.queue = new WorkQueue((k) => this.reconcile(k), { name: 'commitrequests', concurrency: 4, log: deps.log, maxDelayMs: 5_000 });
    this.requests.on({ upsert: (o) => this.queue.add(keyOf(o, clusterOf(o))) });
    // An outcome recorded for a request, or a window opening for one that waits: look at it now.
    this.windows.on({
      upsert: (o) => {
        const r = o as unknown as { target: TargetKey; outcomes: RequestOutcome[] };
        for (const x of r.outcomes ?? []) this.queue.add(`${r.target.cluster}/${r.target.namespace}/${x.name}`);
      },
    });
    // A deleted GitTarget fails its waiting requests now, not at their timeout. (A GitTarget
    // appearing or turning Ready does not retry failed requests: they failed at once, by design.)
    deps.gitTargets.on({
      delete: (gt) => {
        for (const cr of this.requests.list()) {
          if (cr.metadata.namespace === gt.metadata.namespace && clusterOf(cr) === clusterOf(gt) && (cr.spec as Spec | undefined)?.targetRef?.name === gt.metadata.name) {
            this.queue.add(keyOf(cr, clusterOf(cr)));
          }
        }
      },
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.windows.start(), this.requests.start()]);
  }

  async stop(): Promise<void> {
    this.requests.stop();
    this.windows.stop();
    await this.queue.stop();
  }

  private async reconcile(key: string): Promise<QueueResult | void> {
    if (!this.deps.gitTargets.hasSynced) return { requeueAfterMs: 100 };
    const cached = this.requests.get(key);
    if (!cached) return;
    const cr = (await this.deps.store.get(COMMITREQUESTS, crKey(cached))) ?? cached;
    if (cr.metadata.uid !== cached.metadata.uid) return;
    const spec = cr.spec as Spec;
    const now = Date.now();
    if (isFinished(cr)) return this.expire(cr, spec, now);

    const gtKey = `${clusterOf(cr)}/${cr.metadata.namespace ?? ''}/${spec.targetRef.name}`;
    // The cache may lag a GitTarget created just before the request: a miss is confirmed by a consistent read.
    const gt = this.deps.gitTargets.get(gtKey) ?? (await this.deps.store.get(GITTARGETS, { cluster: clusterOf(cr), namespace: cr.metadata.namespace ?? '', name: spec.targetRef.name }));
    const target: TargetKey | undefined = gt ? { cluster: clusterOf(cr), namespace: cr.metadata.namespace ?? '', name: spec.targetRef.name, uid: gt.metadata.uid ?? '' } : undefined;
    const rec = target ? await this.deps.records.get(target) : undefined;
    const recorded = rec?.outcomes.find((o) => o.uid === cr.metadata.uid);
    if (recorded && target) {
      await this.finish(cr, recorded.outcome, recorded.message, recorded);
      await this.deps.records.mutate(target, (r) => {
        const before = r.outcomes.length;
        r.outcomes = r.outcomes.filter((o) => o.uid !== cr.metadata.uid);
        return r.outcomes.length === before ? unchanged(undefined) : undefined;
      });
      return this.expire(cr, spec, now);
    }

    const attached = rec !== undefined && (rec.waiting.some((w) => w.uid === cr.metadata.uid) || rec.windows.some((w) => w.request?.uid === cr.metadata.uid));
    const closeDelayMs = (spec.closeDelaySeconds ?? 0) * 1000;
    const created = Date.parse(cr.metadata.creationTimestamp ?? '') || now;
    const timeoutAt = created + closeDelayMs + (this.deps.requestGraceMs ?? DEFAULT_REQUEST_GRACE_MS);
    if (now >= timeoutAt) {
      if (target) await this.detach(target, cr.metadata.uid ?? '');
      const within = `within ${Math.round((timeoutAt - created) / 1000)}s (closeDelaySeconds plus ${Math.round((this.deps.requestGraceMs ?? DEFAULT_REQUEST_GRACE_MS) / 1000)}s)`;
      if (gt && !attached && !getCondition(gt, 'Ready')) {
        await this.finish(cr, 'Failed', `GitTarget "${spec.targetRef.name}" reported no Ready condition ${within}`);
        return this.expire(cr, spec, now);
      }
      await this.finish(cr, 'Failed', `the request did not finish ${within}; its changes stay pending`);
      return this.expire(cr, spec, now);
    }
    if (attached) {
      // The in-progress status may have been lost (a crash right after attaching): write it again.
      if (!getCondition(cr, 'Ready')) await this.writeStatus(cr, this.pendingConditions(spec, authorshipOf(cr)));
      return { requeueAfterMs: timeoutAt - now };
    }

    // New: check the GitTarget, then attach.
    if (!gt || !target) return this.failNow(cr, spec, `GitTarget "${spec.targetRef.name}" not found in namespace "${cr.metadata.namespace}"`);
    const ready = getCondition(gt, 'Ready');
    // A GitTarget created with (or just before) the request has no status yet: wait for it, within the grace.
    if (!ready) {
      const waiting = `waiting for GitTarget "${spec.targetRef.name}" to report its status`;
      if (getCondition(cr, 'Reconciling')?.message !== waiting) {
        await this.writeStatus(cr, [
          { type: 'Ready', status: 'False', reason: 'Pending', message: waiting },
          { type: 'Reconciling', status: 'True', reason: 'Pending', message: waiting },
          { type: 'Stalled', status: 'False', reason: 'Pending', message: '' },
        ]);
      }
      return { requeueAfterMs: Math.min(NO_STATUS_RECHECK_MS, timeoutAt - now) };
    }
    if (ready.status !== 'True') {
      return this.failNow(cr, spec, `GitTarget "${spec.targetRef.name}" is not Ready (${ready.reason}${ready.message ? `: ${ready.message}` : ''})`);
    }
    const who = authorshipOf(cr);
    if (!who) return this.failNow(cr, spec, 'the request has no submitter recorded and asserts no author');
    const uid = cr.metadata.uid ?? '';
    await this.deps.records.mutate(target, (r) => {
      if (r.outcomes.some((o) => o.uid === uid) || r.waiting.some((w) => w.uid === uid) || r.windows.some((w) => w.request?.uid === uid)) return unchanged(undefined);
      const base = { name: cr.metadata.name ?? '', uid, message: spec.message, author: who.author, authorKind: who.kind, ...(who.claims ? { claims: who.claims } : {}) };
      // Only a window it may claim: unattributed, or its submitter's own (never another user's work).
      const open = openWindow(r);
      if (open && !open.request && mayClaim(open, who.claims)) open.request = { ...base, attachedAt: now, closeAt: now + closeDelayMs };
      else r.waiting.push({ ...base, closeDelayMs, deadline: now + closeDelayMs });
      return undefined;
    });
    await this.writeStatus(cr, this.pendingConditions(spec, who));
    return { requeueAfterMs: timeoutAt - now };
  }

  private pendingConditions(spec: Spec, who: ReturnType<typeof authorshipOf>): Condition[] {
    return [
      { type: 'Ready', status: 'False', reason: 'Pending', message: spec.closeDelaySeconds ? `collecting changes for ${spec.closeDelaySeconds}s, then committing` : 'committing the pending changes' },
      { type: 'Reconciling', status: 'True', reason: 'Pending', message: 'attached to the commit window of the GitTarget' },
      { type: 'Stalled', status: 'False', reason: 'Pending', message: '' },
      ...(who ? [{ type: 'AuthorAttributed', status: 'True' as const, reason: who.reason, message: `author ${who.author.name} <${who.author.email}>` }] : []),
      { type: 'Pushed', status: 'Unknown', reason: 'Pending', message: '' },
    ];
  }

  private async failNow(cr: KubeObject, spec: Spec, message: string): Promise<QueueResult | void> {
    await this.finish(cr, 'Failed', message);
    return this.expire(cr, spec, Date.now());
  }

  private async detach(target: TargetKey, uid: string): Promise<void> {
    await this.deps.records.mutate(target, (r) => {
      const before = JSON.stringify([r.waiting.length, r.windows.map((w) => w.request?.uid)]);
      r.waiting = r.waiting.filter((w) => w.uid !== uid);
      for (const w of r.windows) if (w.request?.uid === uid) delete w.request;
      r.outcomes = r.outcomes.filter((o) => o.uid !== uid);
      return before === JSON.stringify([r.waiting.length, r.windows.map((w) => w.request?.uid)]) ? unchanged(undefined) : undefined;
    });
  }

  private async finish(cr: KubeObject, outcome: RequestOutcome['outcome'], message: string, o?: RequestOutcome): Promise<void> {
    const failed = outcome === 'Failed';
    const who = authorshipOf(cr);
    const written = await this.writeStatus(
      cr,
      [
        { type: 'Ready', status: failed ? 'False' : 'True', reason: outcome, message },
        { type: 'Reconciling', status: 'False', reason: outcome, message: '' },
        { type: 'Stalled', status: failed ? 'True' : 'False', reason: outcome, message: failed ? message : '' },
        ...(who ? [{ type: 'AuthorAttributed', status: 'True' as const, reason: who.reason, message: `author ${who.author.name} <${who.author.email}>` }] : []),
        { type: 'Pushed', status: outcome === 'Committed' ? 'True' : 'False', reason: outcome === 'Committed' ? 'Pushed' : outcome, message: outcome === 'Committed' ? `pushed ${o?.sha} to ${o?.branch}` : '' },
      ],
      (s) => {
        if (o?.sha && outcome === 'Committed') {
          s.sha = o.sha;
          s.branch = o.branch;
        }
      },
    );
    if (!written) return;
    const created = Date.parse(cr.metadata.creationTimestamp ?? '');
    this.deps.metrics?.commitRequests.inc({ outcome });
    if (Number.isFinite(created)) this.deps.metrics?.requestDuration.observe(Math.max(0, (Date.now() - created) / 1000));
    const spec = cr.spec as Spec;
    const fields = { commitRequest: `${cr.metadata.namespace}/${cr.metadata.name}`, gitTarget: `${cr.metadata.namespace}/${spec.targetRef.name}`, outcome, sha: o?.sha, message };
    if (failed) this.deps.log.warn('CommitRequest failed', fields);
    else this.deps.log.info(`CommitRequest ${outcome}`, fields);
  }

  /** Deletes a finished request once its TTL passed; else asks to be woken then. */
  private async expire(cr: KubeObject, spec: Spec, now: number): Promise<QueueResult | void> {
    const fresh = await this.deps.store.get(COMMITREQUESTS, crKey(cr));
    if (!fresh || fresh.metadata.uid !== cr.metadata.uid || !isFinished(fresh)) return;
    // Ready False→True marks success; Stalled False→True marks failure (Ready stays False then).
    const mark = getCondition(fresh, 'Ready')?.reason === 'Failed' ? getCondition(fresh, 'Stalled') : getCondition(fresh, 'Ready');
    const finishedAt = Date.parse(mark?.lastTransitionTime ?? '') || now;
    const ttl = (spec.ttlSecondsAfterFinished ?? DEFAULT_TTL_SECONDS) * 1000;
    if (now < finishedAt + ttl) return { requeueAfterMs: finishedAt + ttl - now };
    await this.deps.store.delete(COMMITREQUESTS, crKey(fresh), Number(fresh.metadata.resourceVersion)).catch(() => undefined);
    this.deps.log.info('CommitRequest deleted after its TTL', { commitRequest: `${cr.metadata.namespace}/${cr.metadata.name}` });
  }

  /** Returns false when the request is gone or already finished (someone else wrote the outcome). */
  private async writeStatus(cr: KubeObject, conds: Condition[], extra?: (s: Record<string, unknown>) => void): Promise<boolean> {
    let wrote = false;
    await updateStatus(this.deps.client ?? (this.deps.client = SystemClient.forStore(this.deps.store)), COMMITREQUESTS, crKey(cr), cr.metadata.uid, (status, obj) => {
      if (isFinished(obj)) return false;
      let changed = false;
      for (const c of conds) changed = setCondition(status, c, obj.metadata.generation) || changed;
      extra?.(status);
      status.observedGeneration = obj.metadata.generation;
      wrote = changed;
      return changed || extra !== undefined;
    });
    return wrote;
  }
}

function crKey(cr: KubeObject) {
  return { cluster: clusterOf(cr), namespace: cr.metadata.namespace ?? '', name: cr.metadata.name ?? '' };
}
