// The watch protocol: a chunked 200 whose headers are flushed at once (kubectl wait blocks until
// it sees them), then one JSON event per line. Covers initial state (resourceVersion unset/0 and
// WatchList's sendInitialEvents), resume from any retained resourceVersion, selector transitions,
// bookmarks, Table and PartialObjectMetadata event objects, and a clean end on timeout.
import * as status from '../../api/status.js';
import type { KubeObject } from '../../model/object.js';
import { StorageError, type StoreEvent, type WatchHandle } from '../../storage/types.js';
import { negotiateAs } from '../negotiation.js';
import { parseIncludeObject, partialObjectMetadata, table } from '../representation.js';
import { matches, type ListOptions } from '../list-options.js';
import type { HandlerContext } from './context.js';
import { listItems } from './list-items.js';
import { jsonOf } from '../respond.js';

/**
 * How often an idle watch (nothing sent for this long) gets a BOOKMARK, whatever its selector drops
 * (an event this handler drops does not count as sent: onEvent returns false), by default: about
 * once a minute, as kube-apiserver's watch cache (defaultBookmarkFrequency), and once more when the
 * watch times out, so the client resumes from a recent resourceVersion. Every second, it was one
 * bookmark per watch per second while anything was written: with a watch per tenant namespace
 * (each GitTarget's mirror of the sandbox), 10,000 bookmarks a second at 10,000 tenants, most of
 * the main thread's time per edit (bench/scale). `--watch-bookmark-interval` sets it.
 */
export const BOOKMARK_INTERVAL_MS = 60_000;

/** Bytes a watch may have queued for a client that does not read before the server ends it. */
export const MAX_UNFLUSHED_BYTES = 32 * 1024 * 1024;

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export async function serveWatch(h: HandlerContext, opts: ListOptions): Promise<void> {
  const { output, metaVersion } = negotiateAs(h.req.headers.accept, { table: true, partial: true, partialList: false });
  const include = output === 'table' ? parseIncludeObject(h.query.get('includeObject')) : 'Metadata';
  const def = h.registry.def;
  const cluster = h.info.cluster === '*' ? undefined : h.info.cluster;
  const namespace = h.info.namespace || undefined;

  // Decide the starting point before any byte is written, so errors can still be proper Statuses.
  let initial: KubeObject[] = [];
  let fromRV: number;
  const rv = opts.resourceVersion;
  const wantsInitial = opts.sendInitialEvents || rv === undefined || rv === '0';
  if (wantsInitial) {
    const listed = await listItems(h, { ...opts, resourceVersion: rv === '0' ? '0' : undefined, continueToken: undefined }, cluster);
    initial = listed.items;
    fromRV = listed.listRV;
  } else {
    fromRV = Number(rv);
  }

  const raw = h.reply.raw;
  h.reply.hijack();
  raw.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  raw.flushHeaders();

  let closed = false;
  // lastRV: every event up to it was seen (delivered or dropped by the selector). sentRV and sentAt:
  // what the client last got (event or bookmark) and when; a bookmark is due when the client has
  // heard nothing for an interval while lastRV moved past sentRV.
  let lastRV = fromRV;
  let sentRV = fromRV;
  let sentAt = Date.now();
  /** When the watch times out (epoch ms), set once it follows the store. */
  let endsAt = Infinity;
  let sentColumns = false;
  let handle: WatchHandle | undefined;
  let timer: NodeJS.Timeout | undefined;
  h.state.metrics.watches.inc({ resource: def.plural });

  const encode = (type: EventType, obj: unknown): string | Buffer => {
    if (type === 'ERROR' || type === 'BOOKMARK') return `${JSON.stringify({ type, object: obj })}\n`;
    let o: unknown = obj;
    if (output === 'table') {
      o = table(def, [obj as KubeObject], { resourceVersion: (obj as KubeObject).metadata.resourceVersion }, include, !sentColumns, metaVersion);
      sentColumns = true;
    } else if (output === 'partial') o = partialObjectMetadata(obj as KubeObject, metaVersion);
    else return jsonEventLine(type, obj as KubeObject); // bytes shared by every watcher
    return `${JSON.stringify({ type, object: o })}\n`;
  };
  // A client that stops reading must not make the server buffer without bound: past the limit the
  // watch ends (as kube-apiserver's watch cache does for a blocked watcher) and the client re-lists.
  let unflushed = 0;
  const write = (line: string | Buffer) => {
    if (closed) return;
    if (raw.write(line)) return;
    unflushed += line.length;
    if (unflushed > MAX_UNFLUSHED_BYTES) {
      h.state.log.warn('ending a watch whose client does not read', { resource: def.plural, bufferedBytes: unflushed });
      finish();
    }
  };
  const finish = () => {
    if (closed) return;
    closed = true;
    h.state.metrics.watches.dec({ resource: def.plural });
    handle?.stop();
    if (timer) clearTimeout(timer);
    raw.end();
  };
  const bookmark = (rvNow: number, initialEnd = false) => {
    const metadata: Record<string, unknown> = { resourceVersion: String(rvNow) };
    if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' };
    write(encode('BOOKMARK', { kind: def.kind, apiVersion: h.registry.apiVersion, metadata }));
    sentRV = rvNow;
    sentAt = Date.now();
  };
  /**
   * When a bookmark is not due yet (sent too recently), the ms until the store should ask again: when
   * it is due, or 2 s before the watch's timeout, whichever is first (from then on every tick, so the
   * timeout's bookmark carries a recent position; false asks at the next tick).
   */
  const bookmarkIfDue = (): boolean | number => {
    if (closed || !opts.allowWatchBookmarks || lastRV <= sentRV) return true;
    const now = Date.now();
    const dueIn = sentAt + h.state.watchBookmarkIntervalMs - now;
    if (dueIn <= 0) {
      bookmark(lastRV);
      return true;
    }
    const untilLastTicks = endsAt - 2_000 - now;
    return untilLastTicks > 0 ? Math.min(dueIn, untilLastTicks) : false;
  };
  raw.on('drain', () => (unflushed = 0));
  raw.on('close', finish);
  raw.on('error', finish);

  // The initial state can be large: write it at the client's pace (live events are not subscribed
  // yet; the store replays them from fromRV afterwards).
  for (const obj of initial) {
    if (closed) return;
    if (!raw.write(encode('ADDED', obj))) await new Promise<void>((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
  }
  if (closed) return;
  if (opts.sendInitialEvents) bookmark(fromRV, true);

  /** False when nothing was written (the selector dropped it), so the store keeps this watch due for progress. */
  const onEvent = (ev: StoreEvent): boolean => {
    if (closed || ev.rv <= lastRV) return false;
    lastRV = ev.rv;
    if (namespace && ev.object.metadata.namespace !== namespace) return false;
    const now = matches(def, opts, ev.object);
    const before = ev.prevObject ? matches(def, opts, ev.prevObject) : false;
    let type: EventType = ev.type;
    if (ev.type === 'MODIFIED' && now && !before) type = 'ADDED';
    else if (ev.type === 'MODIFIED' && !now && before) type = 'DELETED';
    else if (!now && !(ev.type === 'DELETED' && before)) return false;
    write(encode(type, ev.object));
    sentRV = ev.rv;
    sentAt = Date.now();
    return true;
  };
  try {
    handle = await h.registry.watch(cluster, namespace, fromRV, {
      onEvent,
      onProgress: (p) => {
        if (p > lastRV) lastRV = p;
        return bookmarkIfDue();
      },
      onClose: (reason) => {
        write(encode('ERROR', statusFor(reason)));
        finish();
      },
    });
  } catch (e) {
    // Too old (or storage down): an ERROR event with the Status, then the end of the stream —
    // what the watch cache does, and what client-go turns into a re-list.
    let s: status.Status;
    if (e instanceof status.StatusError) s = e.status;
    else if (e instanceof StorageError) s = statusFor(e);
    else {
      h.state.log.error('watch failed to start', { resource: def.plural, error: String((e as Error)?.stack ?? e) });
      s = status.internalError('the watch could not be started; the server logged why').status;
    }
    write(encode('ERROR', s));
    finish();
    return;
  }
  if (closed) handle.stop();
  // No timer per watch: the store's progress ticker (one per process) drives the bookmarks, and
  // events dropped here leave the watch due for it (onEvent's false).
  // At the timeout, a last BOOKMARK with the position reached (kube-apiserver sends one just before
  // the deadline): the client's next watch resumes from there, not from a minute-old bookmark.
  const lasts = watchTimeoutMs(opts.timeoutSeconds, h.state.minRequestTimeoutSeconds);
  endsAt = Date.now() + lasts;
  timer = setTimeout(() => {
    if (!closed && opts.allowWatchBookmarks && lastRV > sentRV) bookmark(lastRV);
    finish();
  }, lasts);
  void h.state.shuttingDown.then(finish);
}

/** Node timers hold at most 2^31-1 ms; a longer delay fires at once (with a warning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How long a watch lasts: timeoutSeconds when given and non-zero (0 means "the server's default",
 * as in kube-apiserver), else minRequestTimeout randomised up to twice that; clamped to what a
 * timer can hold, so 2147484 s and above do not overflow into an immediate end.
 */
export function watchTimeoutMs(timeoutSeconds: number | undefined, minRequestTimeoutSeconds: number): number {
  const seconds = timeoutSeconds ? timeoutSeconds : minRequestTimeoutSeconds * (1 + Math.random());
  return Math.min(seconds * 1000, MAX_TIMER_MS);
}

// One event reaches every watcher of its resource: encode its JSON line once per event type and
// share the bytes (a 1,000-watcher fan-out then costs socket writes, not 1,000 serializations).
const lines = new WeakMap<KubeObject, { type: EventType; line: Buffer }>();

function jsonEventLine(type: EventType, obj: KubeObject): Buffer {
  const hit = lines.get(obj);
  if (hit && hit.type === type) return hit.line;
  const line = Buffer.from(`{"type":"${type}","object":${jsonOf(obj)}}\n`);
  lines.set(obj, { type, line });
  return line;
}

function statusFor(e: StorageError): status.Status {
  if (e.code === 'Expired') return status.gone(e.message).status;
  if (e.code === 'Unavailable') return status.serviceUnavailable(`storage is unavailable: ${e.message}`).status;
  return status.internalError(e.message).status;
}
