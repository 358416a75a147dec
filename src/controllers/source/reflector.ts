// One list+watch stream of one source type (in one namespace, or all), on the SourceClient's shared
// transport (one HTTP/2 stream of a session shared with every other client of the same source and
// credentials, transport.ts), made for a mirror:
// - every end of a watch (a network error, a server-side close) reconnects, with backoff, from the
//   last resourceVersion delivered (a bookmark counts), so a disconnect costs no re-list.
// - an `ERROR` event with code 410 (or an HTTP 410) re-lists and hands the complete set to
//   `replace`, so the caller can reconcile what it missed; a paginated list whose continue token
//   expires starts over, so `replace` never sees a partial set.
// - bookmarks are asked for (client-node does not), and a stream that stays silent past its
//   deadline is cut and resumed (a half-open TCP connection would otherwise hang forever).
// - a handler that fails leaves the resourceVersion where it was, so the event is delivered again
//   after the reconnect rather than lost.
import type { KubeObject } from '../../storage/types.js';
import { SourceError, reasonForStatus, toSourceError, type SourceClient } from './client.js';
import { collectionPath, type ResolvedType } from './discovery.js';

export type StreamState = { phase: 'Listing' } | { phase: 'Ready' } | { phase: 'Failing'; error: SourceError };

export interface StreamHandlers {
  /** The complete current set: the initial list (`initial`), or a re-list after 410. */
  replace(items: KubeObject[], resourceVersion: string, initial: boolean): Promise<void> | void;
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): Promise<void> | void;
  state?(state: StreamState): void;
}

export interface ReflectorOptions {
  namespace?: string;
  labelSelector?: string;
  pageSize?: number;
  /**
   * Server-side watch timeout; the server ends the watch and we resume. Default 1800–3600 s,
   * randomized, as kube-apiserver picks for a watch without one (--min-request-timeout 1800): a
   * resumed watch is a request, and thousands of watches resuming every few minutes were a cost
   * per watch at rest. A half-open HTTP/2 connection is found by the transport's PINGs (transport.ts).
   */
  watchTimeoutSeconds?: number;
  /** A watch with no event or bookmark for this long is cut and resumed. Default timeout + 60 s. */
  silenceMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

type WatchEnd = { kind: 'closed' } | { kind: 'expired' } | { kind: 'error'; error: SourceError };

const sleep = (ms: number, signal: { stopped: boolean; wake?: () => void }) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.wake = () => {
      clearTimeout(t);
      r();
    };
  });

export class Reflector {
  /** The last resourceVersion fully handled; the next watch resumes after it. '' = must list. */
  resourceVersion = '';
  private readonly ctl: { stopped: boolean; wake?: () => void } = { stopped: false };
  private endWatch: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private listed = false;
  readonly path: string;

  constructor(
    private readonly client: SourceClient,
    readonly type: ResolvedType,
    private readonly handlers: StreamHandlers,
    private readonly opts: ReflectorOptions = {},
  ) {
    this.path = collectionPath(type, opts.namespace);
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Drops the current watch connection (as a network failure would); the loop resumes from the last RV. */
  disconnect(): void {
    this.endWatch?.();
  }

  async stop(): Promise<void> {
    this.ctl.stopped = true;
    this.ctl.wake?.();
    this.endWatch?.();
    await this.running;
  }

  private setState(s: StreamState): void {
    try {
      this.handlers.state?.(s);
    } catch {
      // A state listener's failure must not end the stream.
    }
  }

  private async loop(): Promise<void> {
    let delay = this.opts.backoffInitialMs ?? 500;
    const maxDelay = this.opts.backoffMaxMs ?? 30_000;
    const backoff = async (error: SourceError) => {
      this.setState({ phase: 'Failing', error });
      await sleep(Math.min(delay, maxDelay) * (0.5 + Math.random()), this.ctl);
      delay = Math.min(delay * 2, maxDelay);
    };
    while (!this.ctl.stopped) {
      if (!this.resourceVersion) {
        if (!this.listed) this.setState({ phase: 'Listing' });
        try {
          const { items, resourceVersion } = await this.listAll();
          if (this.ctl.stopped) return;
          await this.handlers.replace(items, resourceVersion, !this.listed);
          this.listed = true;
          this.resourceVersion = resourceVersion;
          delay = this.opts.backoffInitialMs ?? 500;
          this.setState({ phase: 'Ready' });
        } catch (e) {
          if (this.ctl.stopped) return;
          await backoff(toSourceError(e, this.client.server));
          continue;
        }
      }
      const end = await this.watchOnce();
      if (this.ctl.stopped) return;
      if (end.kind === 'expired') {
        this.resourceVersion = '';
      } else if (end.kind === 'error') {
        if (end.error.reason === 'Expired') this.resourceVersion = '';
        else await backoff(end.error);
      } else {
        // A clean end (server timeout): resume at once; a healthy stream resets the backoff.
        delay = this.opts.backoffInitialMs ?? 500;
      }
    }
  }

  /** Every page of the collection; a 410 on a continue token starts the list over. */
  private async listAll(): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    for (;;) {
      const items: KubeObject[] = [];
      let cont: string | undefined;
      let rv = '';
      try {
        do {
          const page = await this.client.getJSON<{ items?: KubeObject[]; metadata?: { resourceVersion?: string; continue?: string } }>(this.path, {
            limit: this.opts.pageSize ?? 500,
            continue: cont,
            labelSelector: this.opts.labelSelector || undefined,
          });
          const kindOf = { apiVersion: this.type.group ? `${this.type.group}/${this.type.version}` : this.type.version, kind: this.type.kind };
          // List items carry no apiVersion/kind on real clusters; the sanitized file needs both.
          for (const it of page.items ?? []) items.push({ ...kindOf, ...it, apiVersion: it.apiVersion || kindOf.apiVersion, kind: it.kind || kindOf.kind });
          if (!cont) rv = page.metadata?.resourceVersion ?? '';
          cont = page.metadata?.continue || undefined;
        } while (cont && !this.ctl.stopped);
      } catch (e) {
        if (cont && e instanceof SourceError && e.reason === 'Expired') continue;
        throw e;
      }
      if (!rv) throw new SourceError('Failed', `the list of ${this.path} carries no resourceVersion`);
      return { items, resourceVersion: rv };
    }
  }

  private watchOnce(): Promise<WatchEnd> {
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? 1800 + Math.floor(Math.random() * 1800);
    const silenceMs = this.opts.silenceMs ?? (timeoutSeconds + 60) * 1000;
    return new Promise<WatchEnd>((resolve) => {
      let ended = false;
      let failed = false;
      let chain: Promise<void> = Promise.resolve();
      let lastActivity = Date.now();
      let controller: AbortController | undefined;
      // One timer per watch that fires only when the watch may have been silent for silenceMs
      // (re-armed for the rest when something came meanwhile): nothing periodic per watch at rest.
      let dog: NodeJS.Timeout | undefined;
      const arm = (ms: number) => {
        dog = setTimeout(() => {
          const quietFor = Date.now() - lastActivity;
          if (quietFor >= silenceMs) finish({ kind: 'error', error: new SourceError('Unreachable', `the watch of ${this.path} stayed silent for ${silenceMs} ms`) });
          else arm(silenceMs - quietFor);
        }, ms);
      };
      arm(silenceMs);
      const finish = (end: WatchEnd) => {
        if (ended) return;
        ended = true;
        clearTimeout(dog);
        controller?.abort();
        // Resolve after the queued handlers ran, so the RV the loop resumes from is final.
        void chain.then(() => resolve(failed && end.kind !== 'error' ? { kind: 'error', error: new SourceError('Failed', 'a change could not be recorded') } : end));
      };
      const onEvent = (type: string, obj: any) => {
        if (ended) return;
        lastActivity = Date.now();
        if (type === 'ERROR') {
          const code = typeof obj?.code === 'number' ? obj.code : 500;
          finish(code === 410 ? { kind: 'expired' } : { kind: 'error', error: new SourceError(reasonForStatus(code), `the watch of ${this.path} failed: ${obj?.message ?? code}`, code) });
          return;
        }
        const rv: string | undefined = obj?.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          chain = chain.then(() => {
            if (!failed && rv) this.resourceVersion = rv;
          });
          return;
        }
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        chain = chain.then(async () => {
          if (failed) return;
          try {
            await this.handlers.event(type, obj as KubeObject);
            if (rv) this.resourceVersion = rv;
          } catch (e) {
            failed = true;
            finish({ kind: 'error', error: new SourceError('Failed', `handling a change of ${this.path} failed: ${(e as Error).message}`) });
          }
        });
      };
      this.endWatch = () => finish({ kind: 'closed' });
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.opts.labelSelector || undefined,
      };
      controller = new AbortController();
      const ac = controller;
      this.client
        .open(this.path, { ...query, watch: true }, ac.signal)
        .then((res) => {
          if (ended || this.ctl.stopped) return ac.abort();
          if (res.status !== 200) {
            res.body.resume();
            const code = res.status;
            finish(code === 410 ? { kind: 'expired' } : { kind: 'error', error: new SourceError(reasonForStatus(code), `${this.client.server} answered ${code}`, code) });
            return;
          }
          this.setState({ phase: 'Ready' });
          // One JSON watch event per line (apimachinery's watch stream framing for JSON).
          let rest = '';
          res.body.setEncoding('utf8');
          res.body.on('data', (chunk: string) => {
            rest += chunk;
            let nl: number;
            while ((nl = rest.indexOf('\n')) >= 0) {
              const line = rest.slice(0, nl).trim();
              rest = rest.slice(nl + 1);
              if (!line) continue;
              let ev: { type?: string; object?: unknown };
              try {
                ev = JSON.parse(line);
              } catch {
                finish({ kind: 'error', error: new SourceError('Failed', `the watch of ${this.path} sent a line that is not JSON`) });
                return;
              }
              onEvent(String(ev.type), ev.object);
            }
          });
          res.body.on('error', (e) => finish({ kind: 'error', error: toSourceError(e, this.client.server) }));
          res.body.on('end', () => finish({ kind: 'closed' }));
          res.body.on('close', () => finish({ kind: 'closed' }));
        })
        .catch((e) => finish(ended ? { kind: 'closed' } : { kind: 'error', error: toSourceError(e, this.client.server) }));
    });
  }
}
