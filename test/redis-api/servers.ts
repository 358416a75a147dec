// Runs reverser-apiserver processes with --storage=redis on one test Redis and talks to them over
// HTTPS with the generated admin client certificate (keep-alive connections).
import { spawn, type ChildProcess } from 'node:child_process';
import https from 'node:https';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export interface Reply {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

export interface ApiServer {
  url: string;
  proc: ChildProcess;
  /** stderr lines, for assertions that nothing crashed. */
  log: string[];
  exited(): boolean;
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<Reply>;
  /** Streams a watch; returns the events seen so far and a stop function. */
  watch(path: string): { events: Array<{ type: string; object: any }>; done: Promise<void>; stop(): void };
  stop(): Promise<void>;
}

export interface CertFiles {
  dir: string;
  ca: string;
  cert: string;
  key: string;
}

/** Starts one server. Servers sharing `certDir` share the dev CA and admin certificate. */
export async function startServer(opts: { redisUrl: string; certDir: string; extraArgs?: string[] }): Promise<ApiServer> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'reverser-redis-api-'));
  const args = [
    MAIN, 'serve', `--secure-port=${port}`, `--data-dir=${dataDir}`, `--cert-dir=${opts.certDir}`,
    '--storage=redis', `--redis-url=${opts.redisUrl}`, '--authorization-mode=AlwaysAllow', '--log-level=warn',
    ...(opts.extraArgs ?? []),
  ];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  proc.stderr!.on('data', (b: Buffer) => log.push(...b.toString().split('\n').filter(Boolean)));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('get gittargets -A')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`server exited ${code}: ${log.join('\n')}`)));
  });
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: 64,
    ca: readFileSync(join(opts.certDir, 'ca.crt')),
    cert: readFileSync(join(opts.certDir, 'admin.crt')),
    key: readFileSync(join(opts.certDir, 'admin.key')),
  });
  const url = `https://127.0.0.1:${port}`;
  const request = (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = https.request(
        `${url}${path}`,
        {
          method,
          agent,
          headers: { accept: 'application/json', ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode!, body: parsed, headers: res.headers });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (payload) req.write(payload);
      req.end();
    });
  const watch = (path: string) => {
    const events: Array<{ type: string; object: any }> = [];
    let req: ReturnType<typeof https.request> | undefined;
    const done = new Promise<void>((resolve) => {
      req = https.request(`${url}${path}`, { agent: false, ca: agent.options.ca, cert: agent.options.cert, key: agent.options.key, headers: { accept: 'application/json' } }, (res) => {
        let buf = '';
        res.on('data', (c: Buffer) => {
          buf += c.toString();
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim()) events.push(JSON.parse(line));
          }
        });
        res.on('end', () => resolve());
        res.on('error', () => resolve());
        res.on('close', () => resolve());
      });
      req.on('error', () => resolve());
      req.end();
    });
    return { events, done, stop: () => req?.destroy() };
  };
  return {
    url,
    proc,
    log,
    exited: () => proc.exitCode !== null || proc.signalCode !== null,
    request,
    watch,
    async stop() {
      agent.destroy();
      if (proc.exitCode === null && proc.signalCode === null) {
        const gone = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await gone;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const NS = '/apis/configbutler.ai/v1alpha1/namespaces/team-a/gittargets';

export function gitTarget(name: string, labels: Record<string, string> = {}): object {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, labels },
    spec: { repository: { url: 'local:config' }, branch: 'main', path: `tenants/${name}` },
  };
}

export async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
