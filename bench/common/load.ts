// A closed-loop HTTPS load generator (node https, keep-alive, fixed concurrency, fixed duration)
// and the small statistics the benchmarks print. The client does as little as possible per
// response (counts bytes, never parses) so it costs the same against the server and the floor.
import https from 'node:https';

export interface Target {
  host: string;
  port: number;
  tls: { ca: string; cert: string; key: string };
}

export interface Req {
  method: string;
  path: string;
  body?: string;
  contentType?: string;
  /** Extra request headers (e.g. accept-encoding). */
  headers?: Record<string, string>;
  /** The answer must be complete within this many ms (default REQUEST_DEADLINE_MS), or the request fails. */
  deadlineMs?: number;
}

/**
 * How long `request` waits for a whole answer unless told otherwise: a server that never answers
 * fails the bench with the request named instead of hanging it (bench/scale waits hours otherwise).
 */
export const REQUEST_DEADLINE_MS = 300_000;

export interface LoadResult {
  count: number;
  errors: number;
  firstError?: string;
  seconds: number;
  rps: number;
  /** Per-request latencies in ms. */
  lat: number[];
  bytes: number;
}

export function agentFor(t: Target, maxSockets: number): https.Agent {
  return new https.Agent({ keepAlive: true, maxSockets, ca: t.tls.ca, cert: t.tls.cert, key: t.tls.key });
}

export function request(t: Target, agent: https.Agent, r: Req): Promise<{ status: number; body: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json', ...(r.headers ?? {}) };
    if (r.body !== undefined) {
      headers['content-type'] = r.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(r.body));
    }
    const q = https.request({ host: t.host, port: t.port, method: r.method, path: r.path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), bytes }));
      res.on('error', reject);
    });
    q.on('error', reject);
    const deadline = r.deadlineMs ?? REQUEST_DEADLINE_MS;
    const timer = setTimeout(() => q.destroy(new Error(`${r.method} ${r.path}: no complete answer within ${deadline} ms`)), deadline);
    q.on('close', () => clearTimeout(timer));
    q.end(r.body);
  });
}

/** Byte-counting variant of `request`: the body is dropped as it arrives. */
function fire(t: Target, agent: https.Agent, r: Req, headers: Record<string, string>): Promise<{ status: number; bytes: number; text?: string }> {
  return new Promise((resolve, reject) => {
    const q = https.request({ host: t.host, port: t.port, method: r.method, path: r.path, agent, headers }, (res) => {
      let bytes = 0;
      const status = res.statusCode ?? 0;
      let text = '';
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (status >= 300 && text.length < 500) text += c.toString();
      });
      res.on('end', () => resolve({ status, bytes, text }));
      res.on('error', reject);
    });
    q.on('error', reject);
    q.end(r.body);
  });
}

/**
 * `concurrency` workers each send `next()` requests back to back for `durationMs` (or until
 * `maxRequests` completed). A response whose status is not `expect` counts as an error.
 */
export async function runLoad(
  t: Target,
  agent: https.Agent,
  opts: { durationMs: number; concurrency: number; expect: number; next: (i: number) => Req; maxRequests?: number },
): Promise<LoadResult> {
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let bytes = 0;
  let issued = 0;
  const start = performance.now();
  const end = start + opts.durationMs;
  const max = opts.maxRequests ?? Infinity;
  const worker = async () => {
    while (performance.now() < end && issued < max) {
      const r = opts.next(issued++);
      const headers: Record<string, string> = { accept: 'application/json' };
      if (r.body !== undefined) {
        headers['content-type'] = r.contentType ?? 'application/json';
        headers['content-length'] = String(Buffer.byteLength(r.body));
      }
      const t0 = performance.now();
      try {
        const res = await fire(t, agent, r, headers);
        lat.push(performance.now() - t0);
        bytes += res.bytes;
        if (res.status !== opts.expect) {
          errors++;
          firstError ??= `${r.method} ${r.path}: HTTP ${res.status} ${res.text}`;
        }
      } catch (e) {
        errors++;
        firstError ??= `${r.method} ${r.path}: ${(e as Error).message}`;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  return { count: lat.length, errors, firstError, seconds, rps: lat.length / seconds, lat, bytes };
}

export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function fmt(x: number, digits = 1): string {
  if (!Number.isFinite(x)) return '—';
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}
