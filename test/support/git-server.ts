// A real Git smart-HTTP server for tests: a small node http server that runs git's own CGI,
// `git http-backend`, for every request, behind HTTP basic auth. Repositories are bare
// directories under a temp root. `stop()` and `start()` keep the port, so a test can take the
// server down and bring it back.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BACKEND = '/usr/lib/git-core/git-http-backend';

export interface GitServer {
  readonly root: string;
  readonly port: number;
  readonly username: string;
  readonly password: string;
  /** Requests seen, by `METHOD path?query` (for "no retry storm" checks). */
  readonly requests: string[];
  /** `http://127.0.0.1:<port>/<name>.git` (without credentials). */
  url(name: string): string;
  /** The same URL with credentials, for the git CLI. */
  authURL(name: string): string;
  createBareRepo(name: string, initialBranch?: string): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `anonymous`: no basic auth (pushes allowed to anyone), for a server that cannot be given a
 * credentials Secret (the cluster tests: GitTarget Secrets come from our own store's sandbox).
 */
export async function startGitServer(opts: { username?: string; password?: string; anonymous?: boolean } = {}): Promise<GitServer> {
  const username = opts.username ?? 'tester';
  const password = opts.password ?? 's3cret';
  const root = mkdtempSync(join(tmpdir(), 'git-server-'));
  const expected = 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
  const requests: string[] = [];
  let port = 0;
  let server: http.Server | undefined;

  const handler: http.RequestListener = (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (!opts.anonymous && req.headers.authorization !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' });
      res.end('unauthorized');
      return;
    }
    const u = new URL(req.url ?? '/', 'http://localhost');
    const cgi = spawn(BACKEND, [], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: username, // enables receive-pack (pushes) for the authenticated user
        REMOTE_ADDR: '127.0.0.1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const sep = head.indexOf('\r\n\r\n');
      if (sep < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, sep).toString('latin1').split('\r\n')) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(sep + 4));
    });
    cgi.stderr.resume();
    cgi.on('close', () => {
      if (!headersDone) res.writeHead(500);
      res.end();
    });
  };

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const s = http.createServer(handler);
      s.keepAliveTimeout = 2000;
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server) return resolve();
      const s = server;
      server = undefined;
      s.close(() => resolve());
      s.closeAllConnections();
    });
  await start();
  return {
    root,
    get port() {
      return port;
    },
    username,
    password,
    requests,
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    authURL: (name) => `http://${username}:${password}@127.0.0.1:${port}/${name}.git`,
    createBareRepo(name, initialBranch = 'main') {
      const dir = join(root, `${name}.git`);
      execFileSync('git', ['init', '--quiet', '--bare', `--initial-branch=${initialBranch}`, dir]);
      // No background `git gc --auto` after pushes: it only adds noise to timings in tests.
      execFileSync('git', ['config', 'receive.autogc', 'false'], { cwd: dir });
      return dir;
    },
    stop,
    start,
    async close() {
      await stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
