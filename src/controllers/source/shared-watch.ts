// One list+watch of one type in one namespace (or all) of one source, shared by every GitTarget
// stream that selects it with the same credentials (sources.ts keys it so): an informer cache in
// the client-go sense. The Reflector (reflector.ts) lists and watches once; each subscriber gets the
// part its own label selector matches, applied here on delivery, and sees exactly what a watch of
// its own with that selector would have told it:
// - `replace` (the initial list, a re-list after 410) hands each subscriber the matching items;
// - an ADDED/MODIFIED object that matches is delivered as is (a MODIFIED that enters the selection
//   as ADDED); a MODIFIED one that does not match is delivered as DELETED, as kube-apiserver's
//   filtered watch does when an object leaves it (a subscriber that never held it ignores it, as the
//   mirror does); a DELETED object is delivered when its last state matches.
// Deliveries run one at a time, in the source's order, and the watch waits for every subscriber:
// when one fails, the reflector resumes from the last resourceVersion everybody handled and
// delivers again (the mirror's handlers are idempotent: an unchanged object is a no-op). A
// subscriber that joins a running watch first gets the cache as its initial list, in order with
// the events around it. The watch stops when its last subscriber leaves.
import type { KubeObject } from '../../storage/types.js';
import { parseLabelSelector, type LabelSelector } from '../../api/selectors.js';
import { SourceError, toSourceError, type SourceClient } from './client.js';
import type { ResolvedType } from './discovery.js';
import { Reflector, type ReflectorOptions, type StreamHandlers, type StreamState } from './reflector.js';

interface Subscriber {
  handlers: StreamHandlers;
  selector: LabelSelector | undefined;
  /** Has had its initial list. */
  listed: boolean;
  gone: boolean;
  retryTimer?: NodeJS.Timeout;
  retryMs: number;
}

export interface Subscription {
  /** The collection path watched (for logs). */
  readonly path: string;
  /** Leaves the watch; the last one to leave stops it. */
  stop(): Promise<void>;
}

const objectKey = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * The object without metadata.managedFields, as cached and delivered: no subscriber reads them (the
 * mirror's sanitizer drops them, src/controllers/mirror/sanitize.ts), and in a small object they
 * are often the largest part, held once per object of every watched namespace.
 */
function withoutManagedFields(o: KubeObject): KubeObject {
  if (!o.metadata?.managedFields) return o;
  const { managedFields: _dropped, ...metadata } = o.metadata;
  return { ...o, metadata };
}

export class SharedWatch {
  private readonly reflector: Reflector;
  /** Subscribers that get deliveries (their initial list done or pending in order). */
  private readonly subscribers = new Set<Subscriber>();
  /** Everyone who has not left, including joins still queued or backing off: the watch lives while any remain. */
  private readonly members = new Set<Subscriber>();
  private cache = new Map<string, KubeObject>();
  private listed = false;
  private state: StreamState = { phase: 'Listing' };
  private serial: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | undefined;

  constructor(
    client: SourceClient,
    type: ResolvedType,
    namespace: string | undefined,
    opts: ReflectorOptions,
    /** Called once when the last subscriber left (the owner forgets this watch). */
    private readonly onEmpty: () => void,
  ) {
    this.reflector = new Reflector(
      client,
      type,
      {
        replace: (items, rv) => this.inOrder(() => this.replace(items.map(withoutManagedFields), rv)),
        event: (t, obj) => this.inOrder(() => this.event(t, withoutManagedFields(obj))),
        state: (s) => {
          this.state = s;
          for (const sub of this.subscribers) safeState(sub, s);
        },
      },
      { ...opts, namespace, labelSelector: undefined },
    );
    this.reflector.start();
  }

  get path(): string {
    return this.reflector.path;
  }

  /** Subscribers (tests, stats). */
  get size(): number {
    return this.members.size;
  }

  subscribe(labelSelector: string | undefined, handlers: StreamHandlers, retryMs = 500): Subscription {
    let selector: LabelSelector | undefined;
    let refused: SourceError | undefined;
    try {
      selector = labelSelector ? parseLabelSelector(labelSelector) : undefined;
    } catch (e) {
      // The source would have answered 400 to this selector: the stream reports it and never lists.
      refused = new SourceError('Failed', `labelSelector ${JSON.stringify(labelSelector)}: ${(e as Error).message}`, 400);
    }
    const sub: Subscriber = { handlers, selector, listed: false, gone: false, retryMs };
    if (refused) {
      safeState(sub, { phase: 'Failing', error: refused });
      return { path: this.path, stop: async () => void (sub.gone = true) };
    }
    this.members.add(sub);
    this.join(sub);
    return {
      path: this.path,
      stop: () => this.leave(sub),
    };
  }

  private inOrder<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private matches(sub: Subscriber, obj: KubeObject): boolean {
    return !sub.selector || sub.selector.empty || sub.selector.matches(obj.metadata?.labels);
  }

  /** Runs `fn` for every subscriber at once; rejects with the first failure after all settled. */
  private async each(fn: (sub: Subscriber) => Promise<void> | void): Promise<void> {
    const results = await Promise.allSettled([...this.subscribers].map(async (sub) => (sub.gone ? undefined : fn(sub))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async replace(items: KubeObject[], rv: string): Promise<void> {
    this.cache = new Map(items.map((o) => [objectKey(o), o]));
    this.listed = true;
    await this.each(async (sub) => {
      await sub.handlers.replace(
        items.filter((o) => this.matches(sub, o)),
        rv,
        !sub.listed,
      );
      sub.listed = true;
    });
  }

  private async event(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): Promise<void> {
    const key = objectKey(obj);
    const old = this.cache.get(key);
    if (type === 'DELETED') this.cache.delete(key);
    else this.cache.set(key, obj);
    await this.each(async (sub) => {
      if (this.matches(sub, obj)) {
        // Entering the selection is ADDED for this subscriber (a re-delivery sees `old` updated: MODIFIED, the same to a mirror).
        await sub.handlers.event(type === 'MODIFIED' && old && !this.matches(sub, old) ? 'ADDED' : type, obj);
      } else if (type === 'MODIFIED') {
        // Not "only when `old` matched": a re-delivery after a failure finds `old` already updated.
        await sub.handlers.event('DELETED', obj);
      }
    });
  }

  /** Adds a subscriber in order with deliveries: a watch that listed already replays its cache first. */
  private join(sub: Subscriber): void {
    void this.inOrder(async () => {
      if (sub.gone) return;
      if (!this.listed) {
        this.subscribers.add(sub);
        safeState(sub, this.state);
        return;
      }
      try {
        await sub.handlers.replace(
          [...this.cache.values()].filter((o) => this.matches(sub, o)),
          this.reflector.resourceVersion,
          true,
        );
      } catch (e) {
        // As the reflector does after a failed list: report, back off, try again.
        safeState(sub, { phase: 'Failing', error: toSourceError(e, this.path) });
        sub.retryTimer = setTimeout(() => this.join(sub), sub.retryMs);
        sub.retryMs = Math.min(sub.retryMs * 2, 30_000);
        return;
      }
      sub.listed = true;
      this.subscribers.add(sub);
      safeState(sub, this.state.phase === 'Listing' ? { phase: 'Ready' } : this.state);
    });
  }

  private leave(sub: Subscriber): Promise<void> {
    sub.gone = true;
    clearTimeout(sub.retryTimer);
    this.subscribers.delete(sub);
    this.members.delete(sub);
    if (this.members.size > 0) return Promise.resolve();
    if (!this.stopping) {
      this.onEmpty();
      this.stopping = this.reflector.stop();
    }
    return this.stopping;
  }
}

function safeState(sub: Subscriber, s: StreamState): void {
  if (sub.gone) return;
  try {
    sub.handlers.state?.(s);
  } catch {
    // A state listener's failure must not end the stream.
  }
}
