// Writing responses: one place that serializes bodies, sets content types and warning headers.
import type { FastifyReply } from 'fastify';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip, gzip, gzipSync } from 'node:zlib';
import { type Work, YIELD_MASK, inSlices } from '../registry/apply/work.js';
import { LEAF, knownJSON } from '../registry/apply/leaf.js';
import { listPieces, type ListBody } from './list-body.js';
import { stringifyPortable } from '../model/yaml-scalars.js';
import type { Output } from './negotiation.js';
import type { Status } from '../api/status.js';

/** `Warning: 299 - "<text>"` headers; kubectl prints them as `Warning: <text>`. */
function setWarnings(reply: FastifyReply, warnings: string[]): void {
  if (warnings.length) reply.header('warning', warnings.map((w) => `299 - ${JSON.stringify(w)}`));
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/** `?pretty=true` (Go's ParseBool spellings): JSON indented by two spaces, as kube-apiserver writes it. */
function wantsPretty(reply: FastifyReply): boolean {
  const url = reply.request?.url ?? '';
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('pretty=', q)) return false;
  const v = new URLSearchParams(url.slice(q + 1)).get('pretty');
  return v !== null && TRUE.has(v);
}

function jsonBody(reply: FastifyReply, body: unknown): Buffer {
  return Buffer.from(wantsPretty(reply) ? `${JSON.stringify(body, null, 2)}\n` : JSON.stringify(body));
}

/** kube-apiserver compresses responses larger than this when the client accepts gzip. */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
// kube-apiserver's level (defaultGzipContentEncodingLevel): fastest, most of the gain on JSON.
const GZIP_LEVEL = 1;

/** Whether Accept-Encoding lists gzip with a non-zero quality. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (!header) return false;
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [coding, ...params] = part.trim().split(';');
    if (coding!.trim().toLowerCase() !== 'gzip') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/** kube-apiserver marks every response not to be cached by shared caches unless it says otherwise. */
function noCache(reply: FastifyReply): void {
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-cache, private');
}

/** Sends `body`, gzip-compressed when it is over 128 KiB and the client accepts gzip (as kube). */
function out(reply: FastifyReply, code: number, contentType: string, body: Buffer): FastifyReply {
  reply.code(code).header('content-type', contentType);
  noCache(reply);
  if (body.length > GZIP_THRESHOLD_BYTES && acceptsGzip(reply.request?.headers['accept-encoding'])) {
    return reply.header('content-encoding', 'gzip').header('vary', 'Accept-Encoding').send(gzipSync(body, { level: GZIP_LEVEL }));
  }
  return reply.send(body);
}

// Bodies go out as Buffers: fastify then leaves Content-Type exactly as set (for strings it appends
// `; charset=utf-8` and re-quotes parameters, e.g. the aggregated-discovery media type).
export function send(reply: FastifyReply, code: number, body: unknown, output: Output = 'json', warnings: string[] = []): FastifyReply {
  setWarnings(reply, warnings);
  if (output === 'yaml') return out(reply, code, 'application/yaml', Buffer.from(stringifyPortable(body)));
  return out(reply, code, 'application/json', jsonBody(reply, body));
}

/**
 * Serialized JSON, collected as strings and turned into Buffers 64 KiB at a time: joining and
 * encoding a whole 7 MB answer at once held the event loop for tens of milliseconds.
 */
class Pieces {
  private parts: string[] = [];
  private length = 0;
  private readonly buffers: Buffer[] = [];

  push(s: string): void {
    this.parts.push(s);
    this.length += s.length;
    if (this.length >= 64 * 1024) this.flush();
  }

  private flush(): void {
    if (this.parts.length === 0) return;
    this.buffers.push(Buffer.from(this.parts.join('')));
    this.parts = [];
    this.length = 0;
  }

  bytes(): Buffer {
    this.flush();
    return this.buffers.length === 1 ? this.buffers[0]! : Buffer.concat(this.buffers);
  }
}

/**
 * JSON.stringify's output for a value of JSON data, built as work that yields every few hundred
 * array items or object entries (src/registry/apply/work.ts): serializing a 7 MB object (a 3 MiB
 * list and its managedFields) at once held the event loop for tens of milliseconds.
 */
function* stringifyWork(v: unknown, parts: Pieces): Work<void> {
  if (Array.isArray(v)) {
    parts.push('[');
    for (let i = 0; i < v.length; ) {
      if (i > 0) parts.push(',');
      const x = v[i];
      if (x !== null && typeof x === 'object') {
        yield* stringifyWork(x, parts);
        i++;
        if ((i & YIELD_MASK) === 0) yield;
        continue;
      }
      // A run of up to 256 items that are not objects (a list of finalizers) in one
      // JSON.stringify, whose output for them (null for undefined, functions and symbols) is the
      // same item by item, for a fraction of the calls and pieces.
      let end = i + 1;
      while (end < v.length && end - i <= YIELD_MASK) {
        const y = v[end];
        if (y !== null && typeof y === 'object') break;
        end++;
      }
      const run = JSON.stringify(end - i === v.length ? v : v.slice(i, end));
      parts.push(run.slice(1, -1));
      i = end;
      yield;
    }
    parts.push(']');
    return;
  }
  if (v === null || typeof v !== 'object' || typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    parts.push(JSON.stringify(v));
    return;
  }
  // A wide fieldsV1 node encoded by this process carries its text (src/storage/known-json.ts).
  const known = knownJSON(v);
  if (known !== undefined) {
    parts.push(known);
    return;
  }
  parts.push('{');
  let first = true;
  let i = 0;
  // Keys, not entries: entries of a 136,000-key fieldsV1 map are as many arrays made at once.
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    const x = o[k];
    if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
    const name = first ? `${JSON.stringify(k)}:` : `,${JSON.stringify(k)}:`;
    first = false;
    // An empty object (every member of a fieldsV1 set) is written with its key: one piece, not three.
    // A node whose text is known is never empty: for...in would list all its keys before the first.
    if (x === LEAF || (x !== null && typeof x === 'object' && knownJSON(x) === undefined && isEmptyPlainObject(x))) parts.push(`${name}{}`);
    else if (x !== null && typeof x === 'object') {
      parts.push(name);
      yield* stringifyWork(x, parts);
    } else parts.push(`${name}${JSON.stringify(x)}`);
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
  }
  parts.push('}');
}

/** `{}` as JSON data: no own enumerable key and nothing that would serialize it otherwise. */
function isEmptyPlainObject(x: object): boolean {
  if (Array.isArray(x) || typeof (x as { toJSON?: unknown }).toJSON === 'function') return false;
  for (const _ in x) return false;
  return true;
}

const gzipAsync = promisify(gzip);

/** The bytes of JSON.stringify(body) for JSON data, serialized in slices (what sendObject sends). */
export async function jsonInSlices(body: unknown): Promise<Buffer> {
  const parts = new Pieces();
  await inSlices(stringifyWork(body, parts));
  return parts.bytes();
}

/**
 * send() for one object that may be large (the answer to a write): compact JSON is serialized in
 * slices and gzip runs on the thread pool, so a 3 MiB list does not stop other requests meanwhile.
 */
export async function sendObject(reply: FastifyReply, code: number, body: unknown, output: Output = 'json', warnings: string[] = []): Promise<void> {
  if (output !== 'json' || wantsPretty(reply)) {
    send(reply, code, body, output, warnings);
    return;
  }
  const bytes = await jsonInSlices(body);
  setWarnings(reply, warnings);
  reply.code(code).header('content-type', 'application/json');
  noCache(reply);
  if (bytes.length > GZIP_THRESHOLD_BYTES && acceptsGzip(reply.request?.headers['accept-encoding'])) {
    reply.header('content-encoding', 'gzip').header('vary', 'Accept-Encoding').send(await gzipAsync(bytes, { level: GZIP_LEVEL }));
    return;
  }
  reply.send(bytes);
}

// Objects handed out by the store are immutable by contract (src/storage/types.ts; the watch cache
// replaces objects, never edits them), so each is serialized at most once: GETs, LISTs and watch
// events of unchanged objects reuse the bytes.
const serialized = new WeakMap<object, string>();

export function jsonOf(obj: object): string {
  let s = serialized.get(obj);
  if (s === undefined) {
    s = JSON.stringify(obj);
    serialized.set(obj, s);
  }
  return s;
}

export function sendJSONText(reply: FastifyReply, code: number, text: string, warnings: string[] = []): FastifyReply {
  setWarnings(reply, warnings);
  const body = wantsPretty(reply) ? Buffer.from(`${JSON.stringify(JSON.parse(text), null, 2)}\n`) : Buffer.from(text);
  return out(reply, code, 'application/json', body);
}

/**
 * Sends a list as it is serialized (list-body.ts), at the pace the client reads: a piece is made
 * only while less than LIST_WRITE_WINDOW_BYTES wait in the response (with gzip, when the
 * compressor's own backpressure asks for more). A list that stays under the gzip threshold is sent whole, exactly as before (with
 * Content-Length); a larger one is streamed (chunked), gzip-compressed when the client accepts it.
 * A client that goes away mid-list ends the pipeline: the rest is never serialized, nothing throws.
 */
export async function sendList(reply: FastifyReply, body: ListBody, onAbort: (e: unknown) => void): Promise<void> {
  const pieces = listPieces(body, wantsPretty(reply));
  const first: Buffer[] = [];
  let size = 0;
  for (;;) {
    const n = pieces.next();
    if (n.done) {
      out(reply, 200, 'application/json', first.length === 1 ? first[0]! : Buffer.concat(first));
      return;
    }
    first.push(n.value);
    size += n.value.length;
    // HEAD gets the headers a GET would (Content-Length included), so it is built whole; it is rare.
    if (size > GZIP_THRESHOLD_BYTES && reply.request?.method !== 'HEAD') break;
  }
  const gzip = acceptsGzip(reply.request?.headers['accept-encoding']);
  reply.code(200).header('content-type', 'application/json');
  noCache(reply);
  if (gzip) reply.header('content-encoding', 'gzip').header('vary', 'Accept-Encoding');
  const headers = reply.getHeaders();
  reply.hijack();
  const raw = reply.raw;
  try {
    // Inside the try: an HTTP/2 stream the client has already reset refuses even the headers.
    raw.writeHead(200, headers as Record<string, string | string[]>);
    if (gzip) {
      // Compression is the slow part here: gzip's own backpressure paces the pieces.
      const source = Readable.from(
        (function* () {
          yield* first.splice(0);
          yield* pieces;
        })(),
        { objectMode: false },
      );
      await pipeline(source, createGzip({ level: GZIP_LEVEL, chunkSize: 64 * 1024 }), raw);
    } else await writeWindowed(raw, [first.splice(0), pieces]);
  } catch (e) {
    // The client closed the connection (or the stream failed): the status line is long gone, so
    // there is nobody to answer; what is left of the list is never serialized.
    pieces.return(undefined);
    if (!raw.destroyed) raw.destroy();
    onAbort(e);
  }
}

/**
 * Unsent bytes a streamed list may leave queued in its response before it waits for 'drain'. The
 * response's own mark (16 KiB) would make a 1 MB page wait 16 times, each an event-loop turn: on a
 * busy machine 2.7× the time of the buffered answer. With this window it is on par, and four lists
 * in flight hold at most 4 MiB of queued pieces.
 */
export const LIST_WRITE_WINDOW_BYTES = 1024 * 1024;

interface ResponseStream {
  write(chunk: Buffer): boolean;
  end(): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
  readonly writableLength: number;
  readonly writableFinished: boolean;
  /** Absent on HTTP/2 compatibility responses: their 'close' says it. */
  readonly destroyed?: boolean;
}

function clientGone(): Error {
  return Object.assign(new Error('the client closed the connection before the list was sent'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/** Writes every piece, waiting for 'drain' whenever LIST_WRITE_WINDOW_BYTES or more are queued; rejects if the client goes away. */
async function writeWindowed(out: ResponseStream, sources: Array<Iterable<Buffer>>): Promise<void> {
  let failed: unknown;
  let wake: (() => void) | undefined;
  const onDrain = () => wake?.();
  const onClose = () => {
    if (!out.writableFinished) failed ??= clientGone();
    wake?.();
  };
  const onError = (e: unknown) => {
    failed ??= e;
    wake?.();
  };
  out.on('drain', onDrain);
  out.on('close', onClose);
  out.on('error', onError);
  try {
    for (const source of sources) {
      for (const piece of source) {
        if (failed || out.destroyed) throw failed ?? clientGone();
        out.write(piece);
        while (!failed && !out.destroyed && out.writableLength >= LIST_WRITE_WINDOW_BYTES) await new Promise<void>((r) => (wake = r));
      }
    }
    if (failed || out.destroyed) throw failed ?? clientGone();
    let onFinish!: () => void;
    const done = new Promise<void>((resolve, reject) => {
      wake = () => (failed ? reject(failed) : undefined);
      onFinish = resolve;
      out.on('finish', onFinish);
    });
    out.end();
    await done.finally(() => out.off('finish', onFinish));
  } finally {
    out.off('drain', onDrain);
    out.off('close', onClose);
    out.off('error', onError);
  }
}

export function sendStatus(reply: FastifyReply, status: Status, headers: Record<string, string> = {}): FastifyReply {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  noCache(reply);
  return reply.code(status.code).header('content-type', 'application/json').send(jsonBody(reply, status));
}

export function sendRaw(reply: FastifyReply, code: number, contentType: string, body: Buffer | string, headers: Record<string, string> = {}): FastifyReply {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return out(reply, code, contentType, typeof body === 'string' ? Buffer.from(body) : body);
}
