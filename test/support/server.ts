// The built server as a child process (dev PKI, embedded store, AlwaysAllow), plus an HTTPS client
// that authenticates with the generated admin client certificate. Every test file starts its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import assert from 'node:assert/strict';
import { freePort } from './net.js';
import { DEFAULT_WAIT_MS, DeadlineError, waitMs, withDeadline } from './deadline.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const GROUP = 'configbutler.ai';
export const VERSION = 'v1alpha1';
export const GV = `/apis/${GROUP}/${VERSION}`;
export const ns = (namespace: string, resource = 'gittargets') => `${GV}/namespaces/${namespace}/${resource}`;

/** Accept header kubectl get sends. */
export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/** The bundle the container image runs (Dockerfile ENTRYPOINT; scripts/bundle.mjs). */
export const BUNDLE_MAIN = fileURLToPath(new URL('../../bundle/main.js', import.meta.url));

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  body: any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  contentType?: string;
  /** Omit the client certificate (anonymous). */
  anonymous?: boolean;
  /** Deadline for the whole response (default 60 s). */
  timeoutMs?: number;
}

export interface StartedServer {
  url: string;
  port: number;
  dataDir: string;
  kubeconfig: string;
  ca: string;
  cert: string;
  key: string;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** Everything the process wrote on stdout so far (its start-up lines: URLs, the chosen audit port). */
  stdout(): string;
  /** True while the child process runs. */
  alive(): boolean;
  /** Process id of the server (for /proc measurements). */
  pid: number;
  request(method: string, path: string, opts?: RequestOptions): Promise<Response>;
  /** GET/POST etc. shortcuts that assert nothing. */
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  /** Raw HTTPS request for streaming (watch): returns the IncomingMessage once headers arrive. */
  stream(path: string, headers?: Record<string, string>): Promise<import('node:http').IncomingMessage>;
  agent: Agent;
  /** SIGKILL (a crash: no shutdown, no flush); resolves once the process is gone. Keeps the data dir. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export { freePort };

/** GET `path` through `server.stream`: status, headers and the undecoded body bytes (gzip left as sent). */
export async function rawBody(server: Pick<StartedServer, 'stream'>, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; bytes: Buffer }> {
  const res = await server.stream(path, headers);
  const chunks: Buffer[] = [];
  await withDeadline(new Promise<void>((resolve, reject) => {
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', resolve);
    res.on('error', reject);
  }), `the body of ${path}`);
  return { status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) };
}

export interface StartOptions {
  /** `sandbox` runs `reverser-apiserver sandbox` (kubeconfig <data-dir>/sandbox.kubeconfig). */
  command?: 'serve' | 'sandbox';
  /** Use (and keep on stop) this data dir instead of a fresh temporary one: restarts on the same data. */
  dataDir?: string;
  /** Port to listen on (a restart on the same address); a free one when absent. */
  port?: number;
  /** Extra environment variables of the server process. */
  env?: Record<string, string>;
  /** The entry script (default dist/src/cli/main.js, tsc's output; BUNDLE_MAIN is what the image runs). */
  main?: string;
}

/**
 * API tests run the server without controllers (`--controllers=none`) so that nothing but the test
 * writes objects; tests of the controllers pass `--controllers=...` themselves.
 */
export function controllersDefault(args: readonly string[]): string[] {
  return args.some((a) => a === '--controllers' || a.startsWith('--controllers=')) ? [] : ['--controllers=none'];
}

/**
 * The tests' git servers (test/support/git-server.ts) are plain http:// on loopback with basic
 * auth, so the harness opts in to credentials over http (docs/security.md); a test of the refusal
 * passes `--allow-insecure-credentials=false`.
 */
export function insecureCredentialsDefault(args: readonly string[]): string[] {
  return args.some((a) => a.startsWith('--allow-insecure-credentials')) ? [] : ['--allow-insecure-credentials=true'];
}

/** Starts `reverser-apiserver serve` on a free port with its own temporary data dir. */
export async function startServer(extraArgs: string[] = [], opts: StartOptions = {}): Promise<StartedServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(extraArgs, opts);
    } catch (e) {
      // A port taken between freePort() and listen() is the only failure worth another port.
      if (attempt < 3 && String((e as Error).message).includes('EADDRINUSE')) continue;
      throw e;
    }
  }
}

async function startOnce(extraArgs: string[], opts: StartOptions): Promise<StartedServer> {
  const command = opts.command ?? 'serve';
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'reverser-e2e-'));
  const removeDataDir = () => {
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const port = opts.port ?? (await freePort());
  const child: ChildProcess = spawn(
    process.execPath,
    [opts.main ?? MAIN, command, '--data-dir', dataDir, '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--log-level', 'warn', ...(command === 'serve' ? controllersDefault(extraArgs) : []), ...insecureCredentialsDefault(extraArgs), ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ? { ...process.env, ...opts.env } : process.env },
  );
  let out = '';
  let err = '';
  let exited = false;
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (/kubectl --kubeconfig \S+ get (gittargets -A|namespaces)\n/.test(out)) resolve();
    });
    child.once('exit', (code, sig) => {
      exited = true;
      reject(new Error(`server exited before it was ready (code ${code}, signal ${sig}):\n${out}\n${err}`));
    });
  });
  try {
    await withDeadline(ready, 'the server to print its kubectl line', 30_000, () => child.kill('SIGKILL'));
  } catch (e) {
    removeDataDir();
    if (e instanceof DeadlineError) e.message += `\nstdout:\n${out}\nstderr:\n${err}`;
    throw e;
  }
  // Servers started with a shared --cert-dir share the dev CA and admin certificate (replicas).
  const certDirArg = extraArgs.find((a) => a.startsWith('--cert-dir='));
  const certs = certDirArg ? certDirArg.slice('--cert-dir='.length) : join(dataDir, 'certs');
  const ca = readFileSync(join(certs, 'ca.crt'), 'utf8');
  const cert = readFileSync(join(certs, 'admin.crt'), 'utf8');
  const key = readFileSync(join(certs, 'admin.key'), 'utf8');
  const agent = new Agent({ ca, cert, key, keepAlive: true, maxSockets: 32 });
  const anonAgent = new Agent({ ca, keepAlive: true });
  const url = `https://127.0.0.1:${port}`;

  const request = (method: string, path: string, opts: RequestOptions = {}): Promise<Response> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      let payload: Buffer | undefined;
      if (opts.body !== undefined) {
        payload = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = opts.contentType ?? 'application/json';
        headers['content-length'] = String(payload.length);
      }
      const limit = waitMs(opts.timeoutMs ?? 60_000);
      const timer = setTimeout(() => {
        req.destroy();
        reject(new DeadlineError(`the response to ${method} ${path}`, limit));
      }, limit);
      const req = httpsRequest(
        { host: '127.0.0.1', port, method, path, headers, agent: opts.anonymous ? anonAgent : agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any;
            try {
              body = JSON.parse(text);
            } catch {
              body = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
          });
          res.on('error', (e) => {
            clearTimeout(timer);
            reject(e);
          });
        },
      );
      req.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.end(payload);
    });

  const stream = (path: string, headers: Record<string, string> = {}) => {
    let req: import('node:http').ClientRequest;
    const headersArrived = new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      req = httpsRequest({ host: '127.0.0.1', port, method: 'GET', path, headers, agent: false, ca, cert, key }, resolve);
      req.on('error', reject);
      req.end();
    });
    return withDeadline(headersArrived, `the response headers of GET ${path}`, DEFAULT_WAIT_MS, () => req.destroy());
  };

  return {
    url,
    port,
    dataDir,
    kubeconfig: join(dataDir, command === 'sandbox' ? 'sandbox.kubeconfig' : 'admin.kubeconfig'),
    ca,
    cert,
    key,
    agent,
    stderr: () => err,
    stdout: () => out,
    pid: child.pid!,
    alive: () => !exited && child.exitCode === null,
    request,
    get: (path, headers) => request('GET', path, { headers }),
    stream,
    async kill() {
      agent.destroy();
      anonAgent.destroy();
      if (!exited && child.exitCode === null) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGKILL');
        await withDeadline(gone, 'the killed server process to exit', 15_000);
      }
    },
    async stop() {
      agent.destroy();
      anonAgent.destroy();
      if (!exited && child.exitCode === null) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await withDeadline(gone, 'the server process to exit', 15_000);
        clearTimeout(t);
      }
      removeDataDir();
    },
  };
}

/** A GitTarget manifest (JSON) for tests. */
export function gitTarget(name: string, namespace = 'default', extra: { labels?: Record<string, string>; spec?: Record<string, unknown> } = {}): any {
  const metadata: Record<string, unknown> = { name, namespace };
  if (extra.labels) metadata.labels = extra.labels;
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'GitTarget',
    metadata,
    spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: 'tenants/a', ...(extra.spec ?? {}) },
  };
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T, R>(items: T[], n: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

/** Reads a watch stream line by line; `next()` resolves with the next parsed event. */
export class EventReader {
  private buf = '';
  private queue: any[] = [];
  private waiters: Array<(v: any) => void> = [];
  ended = false;
  private endWaiters: Array<() => void> = [];

  constructor(readonly res: import('node:http').IncomingMessage) {
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      this.buf += c;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (line.trim() === '') continue;
        this.push(JSON.parse(line));
      }
    });
    const end = () => {
      if (this.ended) return;
      this.ended = true;
      for (const w of this.waiters.splice(0)) w(undefined);
      for (const w of this.endWaiters.splice(0)) w();
    };
    res.on('end', end);
    res.on('close', end);
    res.on('error', end);
  }

  private push(ev: any): void {
    const w = this.waiters.shift();
    if (w) w(ev);
    else this.queue.push(ev);
  }

  /** The next event, or undefined when the stream ended; rejects after `timeoutMs` without one. */
  next(timeoutMs = DEFAULT_WAIT_MS): Promise<any> {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.ended) return Promise.resolve(undefined);
    let waiter!: (v: any) => void;
    const arrived = new Promise((r) => {
      waiter = r;
      this.waiters.push(r);
    });
    // On timeout the waiter leaves the queue, so a late event goes to the next caller, not to nobody.
    return withDeadline(arrived, 'the next watch event', timeoutMs, () => {
      this.waiters = this.waiters.filter((w) => w !== waiter);
    });
  }

  /** Events received but not yet consumed. */
  pending(): number {
    return this.queue.length;
  }

  /** Resolves when the stream has ended; rejects after `timeoutMs` if it has not. */
  end(timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    if (this.ended) return Promise.resolve();
    let waiter!: () => void;
    const ended = new Promise<void>((r) => {
      waiter = r;
      this.endWaiters.push(r);
    });
    return withDeadline(ended, 'the watch stream to end', timeoutMs, () => {
      this.endWaiters = this.endWaiters.filter((w) => w !== waiter);
    });
  }

  close(): void {
    this.res.destroy();
  }
}

/** Opens a watch and returns its reader (asserts nothing about the status). */
export async function watch(server: StartedServer, path: string, accept = 'application/json'): Promise<EventReader> {
  const res = await server.stream(path, { accept });
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    throw new Error(`watch ${path} answered ${res.statusCode}: ${Buffer.concat(chunks).toString()}`);
  }
  return new EventReader(res);
}

/** Asserts a metav1.Status failure body with this code and reason (and message, exact or matching). */
export function assertStatus(r: Response, code: number, reason: string, message?: string | RegExp): void {
  const ctx = `${r.status} ${r.text}`;
  assert.equal(r.status, code, ctx);
  assert.equal(r.body?.kind, 'Status', ctx);
  assert.equal(r.body.apiVersion, 'v1', ctx);
  assert.equal(r.body.status, 'Failure', ctx);
  assert.equal(r.body.code, code, ctx);
  assert.equal(r.body.reason, reason, ctx);
  if (typeof message === 'string') assert.equal(r.body.message, message, ctx);
  else if (message) assert.match(r.body.message, message, ctx);
}
