// Source clusters as the mirror shares them. A SharedSource is one source as one set of credentials
// sees it: its server URL (a kcp workspace's URL includes `/clusters/<name>`) plus its transport key
// (origin, TLS trust, client credentials; transport.ts). Every GitTarget whose kubeconfig resolves
// to the same SharedSource uses its one client (one connection pool), its one discovery cache, and
// its watches: GitTargets selecting the same type in the same namespace share one SharedWatch
// (shared-watch.ts) with their own label selectors applied on delivery.
//
// Sharing never crosses credentials: two kubeconfigs that differ in any credential, or a tenant's
// kubeconfig and the operator's with the same content, are different SharedSources, so a GitTarget
// only ever receives what a list/watch made with its own credentials returned
// (docs/security.md#shared-source-connections).
import type { KubeConfig } from '../../kubeconfig/kubeconfig.js';
import { SourceClient } from './client.js';
import { Discovery, collectionPath, type ResolvedType } from './discovery.js';
import type { ReflectorOptions, StreamHandlers } from './reflector.js';
import { SharedWatch, type Subscription } from './shared-watch.js';
import { transportKey, type TransportPool } from './transport.js';

export class SharedSource {
  readonly client: SourceClient;
  readonly discovery: Discovery;
  private readonly watches = new Map<string, SharedWatch>();
  refs = 0;

  constructor(
    config: KubeConfig,
    transports: TransportPool | undefined,
    private readonly onUnused: () => void,
  ) {
    this.client = new SourceClient(config, { transports });
    this.discovery = new Discovery(this.client);
  }

  /**
   * Subscribes to the list+watch of `type` in `namespace` (all namespaces when undefined or the type
   * is cluster-scoped), filtered by `labelSelector`. The first subscriber's reflector options
   * start the watch; later ones join it.
   */
  watch(type: ResolvedType, namespace: string | undefined, labelSelector: string | undefined, handlers: StreamHandlers, opts: ReflectorOptions = {}): Subscription {
    const ns = type.namespaced ? namespace : undefined;
    const key = `${collectionPath(type, ns)}\0${type.kind}`;
    let w = this.watches.get(key);
    if (!w) {
      const created: SharedWatch = new SharedWatch(this.client, type, ns, opts, () => {
        if (this.watches.get(key) === created) this.watches.delete(key);
      });
      w = created;
      this.watches.set(key, w);
    }
    return w.subscribe(labelSelector, handlers, opts.backoffInitialMs);
  }

  /** Watches open and their subscribers. */
  stats(): { watches: number; subscribers: number } {
    let subscribers = 0;
    for (const w of this.watches.values()) subscribers += w.size;
    return { watches: this.watches.size, subscribers };
  }

  /** Lets go of this source; the last user closes its client (its watches are gone by then). */
  release(): void {
    if (--this.refs > 0) return;
    this.onUnused();
    this.client.close();
  }
}

/** SharedSources by server URL and transport key, counted by their users. */
export class SourceHub {
  private readonly sources = new Map<string, SharedSource>();

  constructor(private readonly transports?: TransportPool) {}

  /** The SharedSource of `config`; call release() on it when done. */
  acquire(config: KubeConfig): SharedSource {
    const server = (config.getCurrentCluster()?.server ?? '').replace(/\/+$/, '');
    const key = `${server}\0${transportKey(config)}`;
    let s = this.sources.get(key);
    if (!s) {
      const created: SharedSource = new SharedSource(config, this.transports, () => {
        if (this.sources.get(key) === created) this.sources.delete(key);
      });
      s = created;
      this.sources.set(key, s);
    }
    s.refs++;
    return s;
  }

  stats(): { sources: number; watches: number; subscribers: number } {
    let watches = 0;
    let subscribers = 0;
    for (const s of this.sources.values()) {
      const st = s.stats();
      watches += st.watches;
      subscribers += st.subscribers;
    }
    return { sources: this.sources.size, watches, subscribers };
  }
}

/** The process's hub, used by every mirror not given another (as the transports are process-wide). */
export const sharedSources = new SourceHub();
