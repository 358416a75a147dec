// A git remote that misbehaves on demand, for the tests of what a tenant's remote may cost us: a
// small node http server in front of a real `git http-backend` server (git-server.ts). In `pass`
// mode it forwards every request; the other modes answer the way broken or hostile remotes do.
// Every request is counted, and the bytes of endless bodies, so a test can assert how hard we
// hammered it and that a transfer stopped.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

export type HostileMode =
  /** Forward to the real git server. */
  | 'pass'
  /** 401 with a Basic challenge (wrong credentials). */
  | 'status401'
  /** 403 (credentials accepted, access refused). */
  | 'status403'
  | 'status404'
  /** 503 (a transient server failure). */
  | 'status503'
  /** 200 text/html: a web page, no git endpoint (no receive-pack advertisement). */
  | 'plain200'
  /** 200 as a receive-pack advertisement whose body never ends (64 KiB chunks as fast as they are read). */
  | 'endless'
  /** 200 as a receive-pack advertisement: a few bytes of body, then nothing more (the connection stays open). */
  | 'stall-body'
  /** Accepts the request and never answers. */
  | 'hang'
  /** Forwards discovery (GETs) but never answers the push (POST git-receive-pack). */
  | 'hang-push';

export interface HostileRemote {
  readonly port: number;
  mode: HostileMode;
  /** `http://127.0.0.1:<port>/<name>.git`. */
  url(name: string): string;
  /** Requests received, with the mode that answered them and when (ms since the epoch). */
  readonly requests: Array<{ method: string; path: string; mode: HostileMode; at: number }>;
  /** Body bytes written by `endless` answers so far. */
  bytesStreamed(): number;
  /** Requests that are open right now (accepted, not yet closed by either side). */
  openRequests(): number;
  /** Requests received so far (those matching `filter`). */
  requestCount(filter?: (r: { method: string; path: string; mode: HostileMode }) => boolean): number;
  close(): Promise<void>;
}

export async function startHostileRemote(upstreamPort: number, mode: HostileMode = 'pass'): Promise<HostileRemote> {
  const requests: HostileRemote['requests'] = [];
  const sockets = new Set<Socket>();
  let streamed = 0;
  let open = 0;
  const state = { mode };

  const server = http.createServer((req, res) => {
    const m = state.mode;
    requests.push({ method: req.method ?? '', path: req.url ?? '', mode: m, at: Date.now() });
    open++;
    res.once('close', () => open--);
    switch (m) {
      case 'status401':
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
        return res.end('unauthorized');
      case 'status403':
        res.writeHead(403, { 'Content-Type': 'text/plain' });
        return res.end('forbidden');
      case 'status404':
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        return res.end('not found');
      case 'status503':
        res.writeHead(503, { 'Content-Type': 'text/plain' });
        return res.end('unavailable');
      case 'plain200':
        res.writeHead(200, { 'Content-Type': 'text/html' });
        return res.end('<html><body>a web site, not a git repository</body></html>');
      case 'endless': {
        res.writeHead(200, { 'Content-Type': req.url?.includes('upload-pack') ? 'application/x-git-upload-pack-advertisement' : 'application/x-git-receive-pack-advertisement' });
        const chunk = Buffer.alloc(64 * 1024, 0x30); // "0000…": pkt-line flushes, forever
        const pump = () => {
          while (!res.destroyed) {
            streamed += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
        };
        pump();
        return;
      }
      case 'stall-body':
        res.writeHead(200, { 'Content-Type': 'application/x-git-receive-pack-advertisement' });
        res.write('001f# service=git-receive-pack\n');
        return;
      case 'hang':
        return; // never answers; the connection stays until the client gives up
      case 'hang-push':
        if (req.method === 'POST' && req.url?.includes('git-receive-pack')) {
          req.resume();
          return;
        }
        return forward(req, res);
      default:
        return forward(req, res);
    }
  });

  function forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const up = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  }

  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    get mode() {
      return state.mode;
    },
    set mode(m: HostileMode) {
      state.mode = m;
    },
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    requests,
    bytesStreamed: () => streamed,
    openRequests: () => open,
    requestCount: (filter) => (filter ? requests.filter(filter).length : requests.length),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
