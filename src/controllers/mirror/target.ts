// The mirror of one GitTarget generation against one source: a stream per (resolved type,
// namespace), each a subscription to the source's shared list+watch of that type and namespace
// (source/sources.ts: shared by every GitTarget with the same source and credentials, filtered by
// this one's label selector), each keeping the sanitized state of what it selected, and every change
// handed to the GitTarget's commit window (WindowSink). The controller replaces the whole
// TargetMirror when the spec, the source credentials or the lease change; inside, nothing restarts.
//
// Order matters and is kept by one serial chain per target: the first snapshot (one commit of
// everything, submitted once every stream finished its initial list) goes to the sink before any
// later change, and a change is recorded in the stream's state only after the sink took it, so a
// failure re-delivers it (the reflector resumes from the last RV it fully handled).
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';
import type { ObjectRef } from '../../git/index.js';
import type { PendingChange, TargetKey, WindowSink } from '../windows/types.js';
import type { SourceError } from '../source/client.js';
import type { ResolvedType } from '../source/discovery.js';
import type { ReflectorOptions, StreamState } from '../source/reflector.js';
import type { Subscription } from '../source/shared-watch.js';
import { sharedSources, type SharedSource, type SourceHub } from '../source/sources.js';
import type { KubeConfig } from '../../kubeconfig/kubeconfig.js';
import { sanitizeObject } from './sanitize.js';
import { isClusterNoise } from './noise.js';

export type PruneMode = 'Never' | 'OnEvent' | 'Always';

/** Objects sanitized per turn of the event loop when a whole listing is handed over. */
const SANITIZE_BATCH = 500;
/** How often a queued snapshot's outcome is read from the Store, besides the sink's push of it. */
const SNAPSHOT_POLL_MS = 60_000;

export interface MirrorSpec {
  resources: Array<{ group: string; version?: string; resource: string; namespaces?: string[]; labelSelector?: string }>;
  prune: PruneMode;
  includeClusterNoise: boolean;
}

/** Synced's (and then Ready's) reason when nothing in the source matches spec.resources (controllers/mirror/status.ts). */
export const NOTHING_TO_MIRROR = 'NothingToMirror';

/** `configmaps in namespace team-a; deployments.apps in all namespaces`: what spec.resources selects, for messages. */
export function selectionOf(resources: MirrorSpec['resources']): string {
  return resources
    .map((r) => {
      const what = r.group ? `${r.resource}.${r.group}` : r.resource;
      const where = r.namespaces?.length ? `in namespace${r.namespaces.length > 1 ? 's' : ''} ${r.namespaces.join(', ')}` : 'in all namespaces';
      return `${what} ${where}${r.labelSelector ? ` with labels ${r.labelSelector}` : ''}`;
    })
    .join('; ');
}

/** What the mirror reports; the controller turns it into conditions. */
export interface MirrorReport {
  /** Resolution of spec.resources: undefined while unknown. */
  unresolved?: string[];
  /** The last failure of discovery or of any stream, or undefined when all are healthy. */
  sourceError?: SourceError;
  streamsReady: number;
  streamsTotal: number;
  synced: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string };
}

export interface TargetMirrorDeps {
  key: TargetKey;
  generation: number;
  spec: MirrorSpec;
  config: KubeConfig;
  /** Identifies the source credentials (a rotation changes it); part of the snapshot id. */
  sourceToken?: string;
  sink: WindowSink;
  log: Logger;
  onReport(r: MirrorReport): void;
  /** Files in the target folder (prune Always at the first snapshot); undefined = not known, nothing is pruned. */
  folderListing?(key: TargetKey): Promise<ObjectRef[] | undefined>;
  reflector?: ReflectorOptions;
  /** Where connections, discovery and watches are shared (source/sources.ts); default: the process's hub. */
  sources?: SourceHub;
}

interface Entry {
  hash: string;
  object: KubeObject;
  resource: string;
  source: { uid: string; resourceVersion: string; resource: string };
}

interface Stream {
  type: ResolvedType;
  namespace?: string;
  labelSelector?: string;
  subscription?: Subscription;
  listed: boolean;
  state: StreamState;
  /** identityKey → sanitized state of every object this stream currently selects. */
  objects: Map<string, Entry>;
}

/** group|kind|namespace|name, as the git engine keys files (apiVersion's version ignored). */
export function identityKeyOf(o: { apiVersion: string; kind: string; metadata: { namespace?: string; name?: string } }): string {
  const slash = o.apiVersion.indexOf('/');
  return `${slash < 0 ? '' : o.apiVersion.slice(0, slash)}|${o.kind}|${o.metadata.namespace ?? ''}|${o.metadata.name ?? ''}`;
}

function refOf(o: KubeObject): ObjectRef {
  return { apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace || undefined, name: o.metadata.name ?? '' };
}

export class TargetMirror {
  private readonly source: SharedSource;
  private readonly streams: Stream[] = [];
  private serial: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private released = false;
  private snapshotSubmitted = false;
  private snapshotId: string | undefined;
  private unresolved: string[] | undefined;
  private discoveryError: SourceError | undefined;
  /** How many objects the snapshot held (0: nothing selected exists yet). */
  private snapshotObjects: number | undefined;
  private synced: MirrorReport['synced'] = { status: 'False', reason: 'InitialSync', message: 'waiting for the initial list of every selected type' };
  private unsubscribe: (() => void) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly startedAt = Date.now();

  constructor(private readonly d: TargetMirrorDeps) {
    this.source = (d.sources ?? sharedSources).acquire(d.config);
  }

  /** Resolves the types and starts the streams; re-tries resolution in the background on failure. */
  async start(): Promise<void> {
    if (this.stopped) return;
    const discovery = this.source.discovery;
    const resolved: Array<{ type: ResolvedType; namespaces?: string[]; labelSelector?: string }> = [];
    const unknown: string[] = [];
    try {
      for (const r of this.d.spec.resources) {
        const res = await discovery.resolve(r);
        if (res.ok) resolved.push({ type: res.type, namespaces: r.namespaces, labelSelector: r.labelSelector });
        else unknown.push(res.message);
      }
      this.discoveryError = undefined;
    } catch (e) {
      this.discoveryError = e as SourceError;
      this.report();
      this.retryTimer = setTimeout(() => void this.start(), 5_000);
      return;
    }
    if (this.stopped) return;
    this.unresolved = unknown;
    if (unknown.length) {
      // Mirroring a part of the selection would be mistaken for all of it: wait for every type.
      this.report();
      this.retryTimer = setTimeout(() => void this.start(), 15_000);
      return;
    }
    for (const r of resolved) {
      const namespaces = r.type.namespaced && r.namespaces?.length ? [...new Set(r.namespaces)] : [undefined];
      for (const namespace of namespaces) this.addStream(r.type, namespace, r.labelSelector);
    }
    this.report();
    for (const s of this.streams) this.subscribe(s);
    if (this.streams.length === 0) this.maybeSnapshot();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pollTimer);
    this.unsubscribe?.();
    if (this.released) return;
    this.released = true;
    await Promise.all(this.streams.map((s) => s.subscription?.stop()));
    this.source.release();
  }

  private addStream(type: ResolvedType, namespace: string | undefined, labelSelector: string | undefined): void {
    this.streams.push({ type, namespace, labelSelector, listed: false, state: { phase: 'Listing' }, objects: new Map() });
  }

  /** Joins the source's shared list+watch of the stream's type and namespace (source/shared-watch.ts). */
  private subscribe(stream: Stream): void {
    stream.subscription = this.source.watch(
      stream.type,
      stream.namespace,
      stream.labelSelector,
      {
        replace: (items, rv, initial) => this.onReplace(stream, items, rv, initial),
        event: (t, obj) => this.onEvent(stream, t, obj),
        state: (s) => {
          stream.state = s;
          this.report();
        },
      },
      this.d.reflector,
    );
  }

  private report(): void {
    if (this.stopped) return;
    const failing = this.streams.find((s) => s.state.phase === 'Failing')?.state as { error: SourceError } | undefined;
    this.d.onReport({
      unresolved: this.unresolved,
      sourceError: this.discoveryError ?? failing?.error,
      streamsReady: this.streams.filter((s) => s.listed && s.state.phase === 'Ready').length,
      streamsTotal: this.streams.length,
      synced: this.synced,
    });
  }

  /** Runs `fn` after every sink operation queued before it. */
  private inOrder<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => undefined);
    return run;
  }

  /** The sanitized state of a live object, or undefined when the mirror must not hold it. */
  private entryOf(stream: Stream, obj: KubeObject): Entry | undefined {
    if (obj.metadata?.deletionTimestamp) return undefined;
    if (!this.d.spec.includeClusterNoise && isClusterNoise(obj, stream.type)) return undefined;
    const full: KubeObject = { ...obj, apiVersion: obj.apiVersion || (stream.type.group ? `${stream.type.group}/${stream.type.version}` : stream.type.version), kind: obj.kind || stream.type.kind };
    const object = sanitizeObject(full);
    const hash = createHash('sha256').update(JSON.stringify(object)).digest('hex');
    return { hash, object, resource: stream.type.resource, source: { uid: obj.metadata.uid ?? '', resourceVersion: obj.metadata.resourceVersion ?? '', resource: stream.type.resource } };
  }

  private write(e: Entry): PendingChange {
    return { op: 'write', object: e.object, resource: e.resource, source: e.source };
  }

  private async onReplace(stream: Stream, items: KubeObject[], _rv: string, initial: boolean): Promise<void> {
    const next = new Map<string, Entry>();
    for (let i = 0; i < items.length; i++) {
      // Sanitizing and hashing 10,000 objects in one go held the API's event loop for ~0.1 s.
      if (i > 0 && i % SANITIZE_BATCH === 0) await new Promise((r) => setImmediate(r));
      const e = this.entryOf(stream, items[i]!);
      if (e) next.set(identityKeyOf(e.object), e);
    }
    await this.inOrder(async () => {
      if (!this.snapshotSubmitted) {
        stream.objects = next;
        stream.listed = true;
        return;
      }
      // A re-list (410, or a stream restarted after the snapshot): reconcile against what we held.
      const changes: PendingChange[] = [];
      for (const [k, e] of next) if (stream.objects.get(k)?.hash !== e.hash) changes.push(this.write(e));
      const gone = [...stream.objects.entries()].filter(([k]) => !next.has(k));
      const mode = this.d.spec.prune;
      // These objects were seen by this stream and are gone now: missed DELETE events. Never under
      // prune Never; and a re-list that would empty what the stream held needs prune Always.
      const emptying = next.size === 0 && stream.objects.size > 0;
      if (mode === 'Always' || (mode === 'OnEvent' && !emptying)) {
        for (const [, e] of gone) changes.push({ op: 'delete', ref: refOf(e.object), source: e.source });
      } else if (gone.length) {
        this.d.log.warn('re-list kept files whose objects are gone', { target: `${this.d.key.namespace}/${this.d.key.name}`, kept: gone.length, prune: mode });
      }
      if (changes.length) await this.d.sink.add(this.d.key, changes);
      stream.objects = next;
      stream.listed = true;
      if (!initial) this.d.log.info('re-listed after the watch expired', { target: `${this.d.key.namespace}/${this.d.key.name}`, path: stream.subscription?.path, changes: changes.length });
    });
    this.report();
    this.maybeSnapshot();
  }

  private async onEvent(stream: Stream, type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): Promise<void> {
    await this.inOrder(async () => {
      const e = type === 'DELETED' ? undefined : this.entryOf(stream, obj);
      const probe = e?.object ?? { ...obj, apiVersion: obj.apiVersion || stream.type.version, kind: obj.kind || stream.type.kind };
      const k = identityKeyOf(probe as KubeObject);
      const held = stream.objects.get(k);
      if (e) {
        if (held?.hash === e.hash) return; // status churn, managedFields, resourceVersion: nothing for Git
        if (this.snapshotSubmitted) await this.d.sink.add(this.d.key, [this.write(e)]);
        if (this.synced.reason === NOTHING_TO_MIRROR) {
          this.synced = { status: 'True', reason: 'Synced', message: 'the first selected object appeared; changes are mirrored as they happen' };
          this.report();
        }
        stream.objects.set(k, e);
        return;
      }
      // Deleted, being deleted (deletionTimestamp), or now noise: the file goes, once.
      if (!held) return;
      if (this.snapshotSubmitted && this.d.spec.prune !== 'Never') {
        await this.d.sink.add(this.d.key, [{ op: 'delete', ref: refOf(held.object), source: { uid: obj.metadata?.uid ?? held.source.uid, resourceVersion: obj.metadata?.resourceVersion ?? '', resource: stream.type.resource } }]);
      }
      stream.objects.delete(k);
    });
  }

  /** Once every stream listed completely: one snapshot of everything selected. */
  private maybeSnapshot(): void {
    if (this.snapshotSubmitted || this.stopped || !this.streams.every((s) => s.listed)) return;
    this.snapshotSubmitted = true;
    void this.inOrder(async () => {
      const keyed: Array<[string, PendingChange]> = [];
      const seen = new Set<string>();
      for (const s of this.streams) {
        for (const [k, e] of s.objects) {
          if (seen.has(k)) continue;
          seen.add(k);
          keyed.push([k, this.write(e)]);
        }
      }
      // By identity key, in code-unit order: localeCompare with the key recomputed per comparison
      // took ~0.1 s of the event loop for 10,000 objects.
      keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const writes = keyed.map(([, w]) => w);
      this.snapshotObjects = writes.length;
      let deletes: ObjectRef[] | undefined;
      if (this.d.spec.prune === 'Always' && this.d.folderListing) {
        // Files in the folder the source no longer (or never) holds: gone under Always. Only from
        // a complete listing: one that failed removes nothing, and the snapshot goes ahead.
        const inFolder = await this.d.folderListing(this.d.key).catch((e: Error) => {
          this.d.log.warn('folder not listed; the snapshot removes nothing', { target: `${this.d.key.namespace}/${this.d.key.name}`, error: e?.message ?? String(e) });
          return undefined;
        });
        if (inFolder) deletes = inFolder.filter((r) => !seen.has(identityKeyOf({ apiVersion: r.apiVersion, kind: r.kind, metadata: { namespace: r.namespace, name: r.name } })));
      }
      // The id names this listing of this source: two sources with equal resourceVersions (two
      // sandboxes fed the same way) still differ by uid and credentials.
      const digest = createHash('sha256')
        .update(this.d.sourceToken ?? '')
        .update(writes.map((w) => (w.op === 'write' ? `${w.source?.uid}@${w.source?.resourceVersion}` : '')).join(','))
        .digest('hex')
        .slice(0, 12);
      const id = `g${this.d.generation}-${digest}`;
      this.snapshotId = id;
      this.unsubscribe = this.d.sink.onSnapshotLanded((t, landed, outcome) => {
        if (t.uid === this.d.key.uid && landed === id) this.landed(outcome);
      }, this.d.key.uid);
      const listedMs = Date.now() - this.startedAt;
      await this.d.sink.snapshot(this.d.key, { id, writes, deletes });
      this.d.log.info('snapshot queued', {
        target: `${this.d.key.namespace}/${this.d.key.name}`,
        id,
        objects: writes.length,
        deletes: deletes?.length ?? 0,
        listedMs,
        queuedMs: Date.now() - this.startedAt - listedMs,
      });
      // The landing is pushed by the sink, also when another replica lands it (the lease moved: the
      // windows informer sees the outcome in the Store, windows/sink.ts observeRecord). Read once
      // now for a snapshot that had landed before (the same id submitted again is a no-op), then
      // rarely, as a safety net only: a poll per second per waiting target was thousands of
      // consistent reads per second while thousands of new GitTargets waited for their first commit.
      const check = () => void this.d.sink.snapshotOutcome(this.d.key, id).then((o) => o && this.landed(o), () => undefined);
      check();
      this.pollTimer = setInterval(check, SNAPSHOT_POLL_MS);
    }).catch((e) => {
      // Not durable: submit again after a pause, from the same state.
      this.d.log.warn('snapshot not queued; retrying', { target: `${this.d.key.namespace}/${this.d.key.name}`, error: (e as Error).message });
      this.snapshotSubmitted = false;
      this.retryTimer = setTimeout(() => this.maybeSnapshot(), 2_000);
    });
  }

  private landed(o: { outcome: string; sha?: string; message?: string }): void {
    if (this.stopped || this.synced.status === 'True') return;
    clearInterval(this.pollTimer);
    this.unsubscribe?.();
    if (o.outcome === 'AlreadyPresent' && this.snapshotObjects === 0) {
      // Nothing selected exists (yet): say what the GitTarget waits for instead of looking mirrored.
      this.synced = { status: 'True', reason: NOTHING_TO_MIRROR, message: `no object of the source matches spec.resources yet (${selectionOf(this.d.spec.resources)}): nothing is committed, and no branch is created, until one does` };
    } else if (o.outcome === 'Committed' || o.outcome === 'AlreadyPresent') {
      this.synced = { status: 'True', reason: 'Synced', message: o.outcome === 'Committed' ? `snapshot committed as ${o.sha?.slice(0, 12) ?? 'a commit'}` : 'the folder already matched the source' };
    } else {
      this.synced = { status: 'False', reason: 'SnapshotFailed', message: o.message ?? 'the snapshot commit failed' };
    }
    this.report();
  }

  /** For tests and the controller's logs. */
  get snapshot(): string | undefined {
    return this.snapshotId;
  }
}
