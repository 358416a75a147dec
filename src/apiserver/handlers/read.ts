// GET of one object and LIST of a collection (with selectors, pagination and the Table and
// PartialObjectMetadata representations).
import * as status from '../../api/status.js';
import { negotiateAs } from '../negotiation.js';
import { jsonOf, send, sendJSONText, sendList } from '../respond.js';
import type { ListBody } from '../list-body.js';
import { parseIncludeObject, partialObjectMetadata, table, tableColumns, tableRow } from '../representation.js';
import { encodeContinue, fieldSelectorKeys, parseListOptions } from '../list-options.js';
import { exactFieldMatch, parseFieldSelector } from '../../api/selectors.js';
import type { HandlerContext } from './context.js';
import { requestContext } from './context.js';
import { serveWatch } from './watch.js';
import { listItems } from './list-items.js';

export async function handleGet(h: HandlerContext): Promise<void> {
  const { output, metaVersion } = negotiateAs(h.req.headers.accept, { table: true, partial: true, partialList: false });
  const rv = h.query.get('resourceVersion');
  // As for lists (list-options.ts) and kube-apiserver: a malformed resourceVersion is a client error.
  if (rv !== null && rv !== '' && !/^\d{1,15}$/.test(rv)) throw status.badRequest(`invalid resource version "${rv}": must be a decimal number`);
  const obj = await h.registry.get(requestContext(h), h.info.namespace, h.info.name, rv === '0' ? 'any' : 'consistent');
  if (output === 'table') {
    const include = parseIncludeObject(h.query.get('includeObject'));
    send(h.reply, 200, table(h.registry.def, [obj], { resourceVersion: obj.metadata.resourceVersion }, include, true, metaVersion));
  } else if (output === 'partial') send(h.reply, 200, partialObjectMetadata(obj, metaVersion));
  else if (output === 'json') sendJSONText(h.reply, 200, jsonOf(obj));
  else send(h.reply, 200, obj, output);
}

/** Errors of a response stream whose client closed it (HTTP/1.1 socket or HTTP/2 stream). */
const CLIENT_GONE = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_INVALID_STREAM']);

/** Index of the first item whose store key sorts after `start` (keys are sorted). */
function firstAfter(keys: string[], start: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! <= start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The deprecated `/watch/` paths, served as kube-apiserver still serves them: always a watch (a
 * `watch=false` does not turn it into a list), and a path naming an object watches that name
 * through a metadata.name field selector; a selector that pins another name is a 400.
 */
export async function handleLegacyWatch(h: HandlerContext): Promise<void> {
  const q = new URLSearchParams(h.query);
  q.set('watch', 'true');
  const opts = parseListOptions(q, h.registry.def);
  const name = h.info.name;
  if (name) {
    if (!opts.fieldSelector.empty) {
      if (exactFieldMatch(q.get('fieldSelector'), 'metadata.name') !== name) throw status.badRequest("fieldSelector metadata.name doesn't match requested name");
    } else opts.fieldSelector = parseFieldSelector(`metadata.name=${name.replace(/[\\,=]/g, '\\$&')}`, fieldSelectorKeys(h.registry.def));
  }
  return serveWatch(h, opts);
}

export async function handleList(h: HandlerContext): Promise<void> {
  const opts = parseListOptions(h.query, h.registry.def);
  if (opts.watch) return serveWatch(h, opts);
  const { output, metaVersion } = negotiateAs(h.req.headers.accept, { table: true, partial: false, partialList: true });
  const include = output === 'table' ? parseIncludeObject(h.query.get('includeObject')) : 'Metadata';
  const def = h.registry.def;
  const cluster = h.info.cluster === '*' ? undefined : h.info.cluster;
  const { items, keys, listRV } = await listItems(h, opts, cluster);
  let page = items;
  let cont: string | undefined;
  let remaining: number | undefined;
  let start = 0;
  // Pages resume after the store's key of the last item served: where the object is stored
  // decides its place, never a field a client can write.
  if (opts.continueToken) start = firstAfter(keys, opts.continueToken.start);
  if (opts.limit > 0 && items.length - start > opts.limit) {
    page = items.slice(start, start + opts.limit);
    cont = encodeContinue({
      rv: opts.continueToken?.rv ?? listRV,
      start: keys[start + opts.limit - 1]!,
    });
    remaining = items.length - start - opts.limit;
  } else if (start > 0) page = items.slice(start);
  const meta: Record<string, unknown> = { resourceVersion: String(opts.continueToken?.rv ?? listRV) };
  if (cont) {
    meta.continue = cont;
    meta.remainingItemCount = remaining;
  }
  if (output === 'yaml') {
    send(h.reply, 200, { apiVersion: h.registry.apiVersion, kind: def.listKind, metadata: meta, items: page }, output);
    return;
  }
  // JSON, Table and PartialObjectMetadataList go out element by element (list-body.ts).
  let body: ListBody;
  if (output === 'table') {
    const now = Date.now();
    const row = (i: number) => tableRow(def, page[i]!, include, now, metaVersion);
    body = {
      head: { kind: 'Table', apiVersion: metaVersion, metadata: meta, columnDefinitions: tableColumns(def) },
      key: 'rows',
      count: page.length,
      compact: (i) => JSON.stringify(row(i)),
      value: row,
    };
  } else if (output === 'partial-list') {
    const item = (i: number) => partialObjectMetadata(page[i]!, metaVersion);
    body = { head: { kind: 'PartialObjectMetadataList', apiVersion: metaVersion, metadata: meta }, key: 'items', count: page.length, compact: (i) => JSON.stringify(item(i)), value: item };
  } else {
    body = { head: { apiVersion: h.registry.apiVersion, kind: def.listKind, metadata: meta }, key: 'items', count: page.length, compact: (i) => jsonOf(page[i]!), value: (i) => page[i] };
  }
  // Counted so the log can say how far a list got when its client went away.
  let serialized = 0;
  const counted: ListBody = { ...body, compact: (i) => (serialized++, body.compact(i)), value: (i) => (serialized++, body.value(i)) };
  await sendList(h.reply, counted, (e) => {
    const fields = { resource: def.plural, items: page.length, serialized, error: String((e as Error)?.message ?? e) };
    // A client that goes away is ordinary; anything else is ours to look at.
    if (CLIENT_GONE.has((e as { code?: string })?.code ?? '')) h.state.log.debug('a LIST ended before its body was sent', fields);
    else h.state.log.error('a LIST failed while its body was sent', fields);
  });
}
