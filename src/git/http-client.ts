// The HTTP transport handed to isomorphic-git (and receive-pack.ts). Compared with
// isomorphic-git/http/node: keep-alive agents (discovery and the following POST reuse one
// connection); every exchange bounded as remote-limits.ts says — connect, headers, body idle and
// total time limits, a cap on the response size, the body streamed to the caller rather than
// buffered here — and cancelled with the commit it belongs to (cancel.ts); and the egress policy
// (src/net/egress.ts): a literal address is checked before each request, a name on every address it
// resolves to when a connection is made (DNS rebinding cannot pass a name that looked harmless).
import http from 'node:http';
import https from 'node:https';
import type { HttpClient, GitHttpRequest, GitHttpResponse } from 'isomorphic-git';
import { EgressPolicy } from '../net/egress.js';
import { cancelledError, currentSignal } from './cancel.js';
import { cappedBody, remoteLimits, timeoutError, tooLargeError, type RemoteLimits } from './remote-limits.js';
import { displayURL } from './repository-url.js';

async function collect(body: GitHttpRequest['body']): Promise<Buffer | undefined> {
  if (!body) return undefined;
  const parts: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

export function createHttpClient(limitsIn?: Partial<RemoteLimits>, egress: EgressPolicy = new EgressPolicy()): HttpClient {
  const limits = remoteLimits(limitsIn);
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 8, lookup: egress.lookup }),
    https: new https.Agent({ keepAlive: true, maxSockets: 8, lookup: egress.lookup }),
  };
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const u = new URL(req.url);
      egress.assertHost(u.hostname);
      const signal = currentSignal();
      if (signal?.aborted) throw cancelledError();
      const body = await collect(req.body);
      // Errors name the repository, not the smart-HTTP endpoint under it.
      const where = displayURL(`${u.protocol}//${u.host}${u.pathname.replace(/\/(info\/refs|git-receive-pack|git-upload-pack)$/, '')}`);
      const mod = u.protocol === 'https:' ? https : http;
      const agent = u.protocol === 'https:' ? agents.https : agents.http;
      const headers: Record<string, string | number> = { ...(req.headers ?? {}) };
      if (body) headers['Content-Length'] = body.length;
      // A kept-alive connection the remote closed just as we reused it fails before any answer:
      // that one is sent again on a new connection, not reported as the remote being down.
      const send = (retried: boolean): Promise<GitHttpResponse> => new Promise<GitHttpResponse>((resolve, reject) => {
        const timers: NodeJS.Timeout[] = [];
        let res: http.IncomingMessage | undefined;
        // Ends the exchange with `err` wherever it is: before the headers the promise rejects,
        // after them the body's reader throws it.
        const fail = (err: Error) => {
          if (res) res.destroy(err);
          r.destroy(err);
        };
        const done = () => {
          for (const t of timers) clearTimeout(t);
          signal?.removeEventListener('abort', onAbort);
        };
        const onAbort = () => fail(cancelledError());
        signal?.addEventListener('abort', onAbort, { once: true });
        const r = mod.request(u, { method: req.method ?? 'GET', headers, agent }, (incoming) => {
          res = incoming;
          clearTimeout(headersTimer);
          // Errors surface through the body's reader; without a listener an error after the
          // consumer stopped reading would be an uncaught exception.
          incoming.on('error', () => undefined);
          incoming.once('close', done);
          const declared = Number(incoming.headers['content-length']);
          if (Number.isFinite(declared) && declared > limits.maxResponseBytes) {
            const err = tooLargeError(where, limits.maxResponseBytes);
            incoming.destroy(err);
            reject(err);
            return;
          }
          resolve({
            url: req.url,
            method: req.method,
            statusCode: incoming.statusCode ?? 0,
            statusMessage: incoming.statusMessage ?? '',
            headers: Object.fromEntries(Object.entries(incoming.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')])),
            body: cappedBody(incoming, limits, where),
          });
        });
        r.on('error', (e: NodeJS.ErrnoException) => {
          done();
          if (!retried && !res && r.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) resolve(send(true));
          else reject(e);
        });
        r.once('socket', (socket) => {
          // A reused keep-alive socket is connected already.
          if (socket.connecting) {
            const t = setTimeout(() => fail(timeoutError(where, 'no connection', limits.connectTimeoutMs)), limits.connectTimeoutMs);
            timers.push(t);
            socket.once(u.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(t));
          }
        });
        // The wait for the answer starts once the request is sent.
        let headersTimer: NodeJS.Timeout | undefined;
        r.once('finish', () => {
          if (res) return;
          headersTimer = setTimeout(() => fail(timeoutError(where, 'no response headers', limits.headersTimeoutMs)), limits.headersTimeoutMs);
          timers.push(headersTimer);
        });
        timers.push(setTimeout(() => fail(timeoutError(where, 'the request did not complete', limits.totalTimeoutMs)), limits.totalTimeoutMs));
        r.end(body);
      });
      return send(false);
    },
  };
}
