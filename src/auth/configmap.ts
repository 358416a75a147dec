// Follows kube-system/extension-apiserver-authentication: one GET at start, then a watch; when the
// watch ends or fails it re-reads and re-watches, and a periodic re-read repairs anything missed.
// CA rotation therefore never needs a restart.
import type { HostingClient } from './hosting.js';
import type { AuthLogger } from './deps.js';

export const AUTH_CONFIGMAP_PATH = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';
const WATCH_PATH = '/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dextension-apiserver-authentication&watch=true&allowWatchBookmarks=true';

interface ConfigMap {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

export class AuthConfigMapFollower {
  private abort = new AbortController();
  private rv = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: HostingClient,
    private readonly onData: (data: Record<string, string>) => void,
    private readonly logger: AuthLogger,
    private readonly resyncMs = 60_000,
    private readonly retryMs = 1_000,
  ) {}

  /** Reads the ConfigMap once (throws if it cannot), then follows it in the background. */
  async start(): Promise<void> {
    await this.read();
    void this.loop();
    this.timer = setInterval(() => {
      this.read().catch((e: Error) => this.logger.warn(`authentication: re-reading kube-system/extension-apiserver-authentication: ${e.message}`));
    }, this.resyncMs);
    this.timer.unref();
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
      try {
        const path = this.rv ? `${WATCH_PATH}&resourceVersion=${encodeURIComponent(this.rv)}` : WATCH_PATH;
        await this.client.watch(path, (ev) => {
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.apply(ev.object as ConfigMap);
          else if (ev.type === 'BOOKMARK') {
            const rv = (ev.object as ConfigMap).metadata?.resourceVersion;
            if (rv) this.rv = rv;
          } else if (ev.type === 'ERROR') this.rv = '';
        }, signal);
      } catch (e) {
        if (signal.aborted) return;
        this.logger.warn(`authentication: watching kube-system/extension-apiserver-authentication: ${(e as Error).message}`);
      }
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, this.retryMs).unref());
      try {
        await this.read();
      } catch (e) {
        this.logger.warn(`authentication: re-reading kube-system/extension-apiserver-authentication: ${(e as Error).message}`);
      }
    }
  }

  close(): void {
    this.abort.abort();
    if (this.timer) clearInterval(this.timer);
  }
}
