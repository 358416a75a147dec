// Helpers of the pre-authentication attack tests: an HTTP/2 client (anonymous or with the admin
// certificate), the server's resident memory from /proc, and its number of metric series.
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { readdirSync, readFileSync } from 'node:fs';
import type { StartedServer } from '../support/server.js';

export interface H2Response {
  status: number;
  text: string;
  body: any;
  ms: number;
}

export function h2session(server: StartedServer, opts: { anonymous?: boolean } = {}): ClientHttp2Session {
  return connect(server.url, { ca: server.ca, ...(opts.anonymous ? {} : { cert: server.cert, key: server.key }) });
}

/**
 * One request on an HTTP/2 session; rejects after `timeoutMs`. `parse: false` leaves `body`
 * undefined: an attacker reading a 7 MB answer only for its status should not spend the 100+ ms of
 * a JSON.parse (and its garbage) on the machine whose other clients it measures.
 */
export function h2request(
  session: ClientHttp2Session,
  method: string,
  path: string,
  opts: { body?: string | Buffer; contentType?: string; timeoutMs?: number; parse?: boolean } = {},
): Promise<H2Response> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { [constants.HTTP2_HEADER_METHOD]: method, [constants.HTTP2_HEADER_PATH]: path };
    if (opts.body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const stream = session.request(headers, { endStream: opts.body === undefined });
    const t = setTimeout(() => {
      stream.close(constants.NGHTTP2_CANCEL);
      reject(new Error(`${method} ${path}: no answer within ${opts.timeoutMs ?? 10_000} ms`));
    }, opts.timeoutMs ?? 10_000);
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[constants.HTTP2_HEADER_STATUS])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      clearTimeout(t);
      const text = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        if (opts.parse !== false) body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      resolve({ status, text, body, ms: performance.now() - started });
    });
    stream.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    if (opts.body !== undefined) stream.end(opts.body);
  });
}

/** Resident set size of a process in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}

/**
 * The process's RSS once it has been idle for `ms`: the smallest of samples taken every 250 ms.
 * An idle V8 finishes its concurrent GC work and may return pages, which on a loaded machine can lag
 * the load by seconds; a real leak does not go away, so this removes noise without hiding one.
 */
export async function settledRssBytes(pid: number, ms = 3000): Promise<number> {
  let min = rssBytes(pid);
  for (let waited = 0; waited < ms; waited += 250) {
    await new Promise((r) => setTimeout(r, 250));
    min = Math.min(min, rssBytes(pid));
  }
  return min;
}

/** Open file descriptors of a process (Linux /proc). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Number of samples (time series) in a Prometheus text exposition. */
export function seriesCount(metricsText: string): number {
  return metricsText.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
}

/** Runs `fn` `total` times with at most `concurrency` in flight. */
export async function repeat(total: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < total) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}
