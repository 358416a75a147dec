// Follows kube-system/extension-apiserver-authentication: one GET at start, then a watch (with
// bookmarks, so the resourceVersion it resumes from stays current). As client-go's reflector, it
// reads the ConfigMap again only when the watch fails: an error, or an ERROR event (410 Gone: the
// resourceVersion is too old). A watch the server ends at its timeout is resumed from the last
// resourceVersion with no read. There is no periodic re-read while the watch is up: it bought
// nothing, and cost an idle server a wake-up and a TLS connection a minute (docs/architecture.md,
// "At rest and at start-up"). The watch asks the server to end it after 5-10 min (timeoutSeconds,
// as client-go's reflector), and a watch silent for 30 s longer than that is a dead connection
// (half-open: the peer vanished without a FIN): it is dropped and the ConfigMap read again.
// CA rotation therefore never needs a restart.
import type { HostingClient } from './hosting.js';
import type { AuthLogger } from './deps.js';

export const AUTH_CONFIGMAP_PATH = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';
const WATCH_PATH = '/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dextension-apiserver-authentication&watch=true&allowWatchBookmarks=true';

/** client-go's reflector: each watch lasts minWatchTimeout (5 min) times a random factor in [1, 2). */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/** How long past its timeoutSeconds a silent watch is kept before it counts as a dead connection. */
export const DEAD_WATCH_GRACE_MS = 30_000;

interface ConfigMap {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

export interface AuthConfigMapFollowerOptions {
  /** Pause after a failed watch or read before the next attempt. */
  retryMs?: number;
  /** Each watch asks for a timeoutSeconds of this times a random factor in [1, 2). */
  minWatchTimeoutSeconds?: number;
  /** A watch silent this long past its timeoutSeconds is dropped as a dead connection. */
  deadWatchGraceMs?: number;
}

export class AuthConfigMapFollower {
  private abort = new AbortController();
  private rv = '';
  private readonly retryMs: number;
  private readonly minWatchTimeoutSeconds: number;
  private readonly deadWatchGraceMs: number;

  constructor(
    private readonly client: HostingClient,
    private readonly onData: (data: Record<string, string>) => void,
    private readonly logger: AuthLogger,
    opts: AuthConfigMapFollowerOptions = {},
  ) {
    this.retryMs = opts.retryMs ?? 1_000;
    this.minWatchTimeoutSeconds = opts.minWatchTimeoutSeconds ?? MIN_WATCH_TIMEOUT_SECONDS;
    this.deadWatchGraceMs = opts.deadWatchGraceMs ?? DEAD_WATCH_GRACE_MS;
  }

  /** Reads the ConfigMap once (throws if it cannot), then follows it in the background. */
  async start(): Promise<void> {
    await this.read();
    void this.loop();
  }

  private async read(): Promise<void> {
    const res = await this.client.request('GET', AUTH_CONFIGMAP_PATH);
    this.apply(res.body as ConfigMap);
  }

  private apply(cm: ConfigMap): void {
    if (cm.metadata?.resourceVersion) this.rv = cm.metadata.resourceVersion;
    this.onData(cm.data ?? {});
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      // Read again before this watch only if the last one failed: without a resourceVersion to
      // resume from, what changed meanwhile would be missed.
      let failed = false;
      try {
        const timeoutSeconds = Math.floor(this.minWatchTimeoutSeconds * (1 + Math.random()));
        const path = `${WATCH_PATH}&timeoutSeconds=${timeoutSeconds}${this.rv ? `&resourceVersion=${encodeURIComponent(this.rv)}` : ''}`;
        await this.client.watch(path, (ev) => {
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.apply(ev.object as ConfigMap);
          else if (ev.type === 'BOOKMARK') {
            const rv = (ev.object as ConfigMap).metadata?.resourceVersion;
            if (rv) this.rv = rv;
          } else if (ev.type === 'ERROR') this.rv = '';
        }, signal, undefined, timeoutSeconds * 1000 + this.deadWatchGraceMs);
      } catch (e) {
        if (signal.aborted) return;
        failed = true;
        this.logger.warn(`authentication: watching kube-system/extension-apiserver-authentication: ${(e as Error).message}`);
      }
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, this.retryMs).unref());
      if (!failed && this.rv) continue;
      try {
        await this.read();
      } catch (e) {
        this.logger.warn(`authentication: re-reading kube-system/extension-apiserver-authentication: ${(e as Error).message}`);
      }
    }
  }

  close(): void {
    this.abort.abort();
  }
}
