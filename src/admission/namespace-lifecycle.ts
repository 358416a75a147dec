// kube-apiserver's NamespaceLifecycle admission for a server whose namespaces belong to the hosting
// cluster (k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle, which every server built on
// k8s.io/apiserver runs): a namespaced object is created only in a namespace that exists (404
// `namespaces "x" not found`) and is not being terminated (403, cause NamespaceTerminating).
// Without it an object created in a missing namespace is orphaned: the namespace controller never
// deletes it, because no namespace is ever deleted.
//
// As upstream, the answer comes from an informer of the cluster's namespaces (list, then watch):
// - while the informer has not synced, a create waits for it up to readyWaitMs (upstream: 10 s)
//   and is then refused, 403 `... is forbidden: not yet ready to handle request` (fail closed);
// - a namespace missing from the cache is looked up live before the create is refused (the cache
//   may lag a namespace created a moment ago); a lookup that fails is a 503 (fail closed).
// In kcp each logical cluster (workspace) has its own namespaces: one informer per logical cluster,
// started on the first create there, through the hosting client's /clusters/<name> URLs.
// The sandbox keeps its own namespaces (src/registry/namespaces.ts); a standalone server without a
// hosting cluster has none to ask and admits every namespace (docs/api.md#namespaces).
import * as status from '../api/status.js';
import type { GroupResource } from '../api/status.js';
import type { HostingClient } from '../auth/hosting.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';

/** What the admission needs of the hosting client (src/auth/hosting.ts). */
export type NamespaceClient = Pick<HostingClient, 'request' | 'watch'>;

export interface NamespaceLifecycleOptions {
  /** How long a create waits for an informer that has not synced yet (upstream: 10 s). */
  readyWaitMs?: number;
  /** Server-side timeout of each watch; the watch is then resumed from the last resourceVersion. */
  watchTimeoutSeconds?: number;
  warn?(message: string, fields?: Record<string, unknown>): void;
}

interface NamespaceObject {
  metadata?: { name?: string; resourceVersion?: string };
  status?: { phase?: string };
}

const NAMESPACES: GroupResource = { group: '', resource: 'namespaces' };
const BACKOFF_MS = [500, 1000, 2000, 5000, 10_000, 30_000];

/** One logical cluster's namespaces: name → phase, kept current by list + watch. */
class NamespaceInformer {
  readonly phases = new Map<string, string>();
  synced = false;
  private rv = '';
  private readonly abort = new AbortController();
  private waiters: Array<() => void> = [];
  private failures = 0;

  constructor(
    private readonly client: NamespaceClient,
    private readonly cluster: string | undefined,
    private readonly opts: Required<Pick<NamespaceLifecycleOptions, 'watchTimeoutSeconds'>> & NamespaceLifecycleOptions,
  ) {
    void this.run();
  }

  /** Resolves true once synced, false when `ms` pass first. */
  waitSynced(ms: number): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, ms);
      this.waiters.push(done);
    });
  }

  stop(): void {
    this.abort.abort();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        if (!this.rv) await this.list();
        await this.watch();
        this.failures = 0;
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.rv = ''; // list again: events may have been missed
        const wait = BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]!;
        this.opts.warn?.('namespace lifecycle: reading the namespaces failed; retrying', { cluster: this.cluster ?? DEFAULT_CLUSTER, error: (e as Error).message, retryInMs: wait });
        await new Promise<void>((r) => {
          const t = setTimeout(r, wait);
          this.abort.signal.addEventListener('abort', () => {
            clearTimeout(t);
            r();
          }, { once: true });
        });
      }
    }
  }

  private async list(): Promise<void> {
    const r = await this.client.request('GET', '/api/v1/namespaces', undefined, this.cluster);
    const body = r.body as { metadata?: { resourceVersion?: string }; items?: NamespaceObject[] };
    this.phases.clear();
    for (const ns of body.items ?? []) if (ns.metadata?.name) this.phases.set(ns.metadata.name, ns.status?.phase ?? 'Active');
    this.rv = body.metadata?.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      for (const w of this.waiters.splice(0)) w();
    }
  }

  private async watch(): Promise<void> {
    const t = this.opts.watchTimeoutSeconds;
    const path = `/api/v1/namespaces?watch=true&allowWatchBookmarks=true&timeoutSeconds=${t}&resourceVersion=${encodeURIComponent(this.rv)}`;
    // A half-open connection would never end the stream: cut it a minute after the server should have.
    const cut = new AbortController();
    const onAbort = () => cut.abort();
    this.abort.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => cut.abort(), (t + 60) * 1000);
    let expired = false;
    try {
      await this.client.watch(path, (ev) => {
        const obj = ev.object as NamespaceObject & { code?: number };
        if (ev.type === 'ERROR') {
          if (obj.code === 410) expired = true;
          return;
        }
        const name = obj.metadata?.name;
        if (obj.metadata?.resourceVersion) this.rv = obj.metadata.resourceVersion;
        if (!name || ev.type === 'BOOKMARK') return;
        if (ev.type === 'DELETED') this.phases.delete(name);
        else this.phases.set(name, obj.status?.phase ?? 'Active');
      }, cut.signal, this.cluster);
    } finally {
      clearTimeout(timer);
      this.abort.signal.removeEventListener('abort', onAbort);
    }
    if (expired) this.rv = '';
  }
}

export class NamespaceLifecycle {
  private readonly informers = new Map<string, NamespaceInformer>();
  private readonly readyWaitMs: number;
  private readonly informerOpts: Required<Pick<NamespaceLifecycleOptions, 'watchTimeoutSeconds'>> & NamespaceLifecycleOptions;
  private stopped = false;

  constructor(private readonly client: NamespaceClient, opts: NamespaceLifecycleOptions = {}) {
    this.readyWaitMs = opts.readyWaitMs ?? 10_000;
    this.informerOpts = { ...opts, watchTimeoutSeconds: opts.watchTimeoutSeconds ?? 300 };
  }

  /** Starts reading the hosting cluster's namespaces now, so the first create does not wait. */
  start(): void {
    this.informer(DEFAULT_CLUSTER);
  }

  private informer(cluster: string): NamespaceInformer {
    let inf = this.informers.get(cluster);
    if (!inf) {
      inf = new NamespaceInformer(this.client, cluster === DEFAULT_CLUSTER ? undefined : cluster, this.informerOpts);
      this.informers.set(cluster, inf);
      if (this.stopped) inf.stop();
    }
    return inf;
  }

  /**
   * Admits the create of `name` (a `gr`) in `namespace` of logical cluster `cluster`, or throws the
   * Status kube-apiserver answers.
   */
  async admitCreate(cluster: string, namespace: string, gr: GroupResource, name: string): Promise<void> {
    const inf = this.informer(cluster);
    if (!(await inf.waitSynced(this.readyWaitMs))) throw status.admissionForbidden(gr, name, 'not yet ready to handle request');
    let phase = inf.phases.get(namespace);
    if (phase === undefined) phase = await this.lookup(cluster, namespace);
    if (phase === 'Terminating') throw status.namespaceTerminating(gr, name, namespace);
  }

  /** The live read upstream makes before refusing a create: the cache may lag a new namespace. */
  private async lookup(cluster: string, namespace: string): Promise<string> {
    try {
      const r = await this.client.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, undefined, cluster === DEFAULT_CLUSTER ? undefined : cluster);
      return (r.body as NamespaceObject).status?.phase ?? 'Active';
    } catch (e) {
      if ((e as { status?: number }).status === 404) throw status.notFound(NAMESPACES, namespace);
      throw status.serviceUnavailable(`unable to look up namespace ${namespace} in the hosting cluster: ${(e as Error).message}`);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const inf of this.informers.values()) inf.stop();
  }
}
