// Runs the real server binary (dist/src/cli/main.js) as a child process for the identity and
// authorization end-to-end tests, and talks to it over HTTPS with client certificates or via kubectl.
import { controllersDefault } from '../support/server.js';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import https from 'node:https';
import { freePort } from '../support/net.js';
import { waitMs, withDeadline } from '../support/deadline.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CA, KeyPair } from '../support/pki.js';
import { issueServerCert } from '../support/pki.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const MAIN_JS = join(REPO_ROOT, 'dist/src/cli/main.js');
export const GROUP_PATH = '/apis/configbutler.ai/v1alpha1';

export interface TestContext {
  after(fn: () => unknown): void;
}

export function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}


export { freePort };

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export interface RequestOptions {
  method?: string;
  /** Client certificate (omit for an anonymous request). */
  cert?: KeyPair;
  /** Headers as name/value pairs, so a header can repeat (one X-Remote-Group line per group). */
  headers?: Array<[string, string]>;
  body?: unknown;
  contentType?: string;
}

/** One HTTPS request on a fresh connection (no keep-alive: a connection's client certificate is remembered). */
export function request(base: string, caPem: string, path: string, o: RequestOptions = {}): Promise<HttpResult> {
  const u = new URL(path, base);
  const payload = o.body === undefined ? undefined : Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body));
  const headers: Array<[string, string]> = [['Accept', 'application/json'], ...(o.headers ?? [])];
  if (payload) headers.push(['Content-Type', o.contentType ?? 'application/json'], ['Content-Length', String(payload.length)]);
  return new Promise((resolve, reject) => {
    const req = https.request(
      u,
      {
        method: o.method ?? 'GET',
        ca: caPem,
        cert: o.cert?.certPem,
        key: o.cert?.keyPem,
        agent: false,
        // node accepts an array of [name, value] pairs flattened; repeated names stay separate lines.
        headers: headers.flat() as unknown as Record<string, string>,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    // A deadline on the whole exchange: a hung server fails the test instead of hanging it.
    req.setTimeout(waitMs(30_000), () => req.destroy(new Error(`no response to ${o.method ?? 'GET'} ${path} within ${waitMs(30_000)} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export interface ServerProcess {
  url: string;
  port: number;
  caPem: string;
  /** Process id of the server (for /proc measurements). */
  pid: number;
  /** stderr so far (JSON log lines), for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * Starts `serve` with a serving certificate from `ca` and the given extra flags; resolves once
 * /healthz answers 200 over HTTPS. Stopped (SIGTERM, then SIGKILL) and its data dir removed in t.after.
 */
export async function startServer(t: TestContext, ca: CA, flags: string[]): Promise<ServerProcess> {
  const dir = tempDir(t, 'auth-e2e-server-');
  const serving = issueServerCert(ca, 'reverser-apiserver', ['localhost'], ['127.0.0.1']);
  writeFileSync(join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });
  const port = await freePort();
  const args = [MAIN_JS, 'serve', '--data-dir', join(dir, 'data'), '--secure-port', String(port), '--bind-address', '127.0.0.1',
    '--tls-cert-file', join(dir, 'tls.crt'), '--tls-private-key-file', join(dir, 'tls.key'), ...controllersDefault(flags), ...flags];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  let exited: number | null | undefined;
  const exitPromise = new Promise<void>((r) => child.on('exit', (code) => { exited = code; r(); }));
  const url = `https://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (exited !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await withDeadline(exitPromise, 'the server process to exit', 15_000);
    clearTimeout(timer);
  };
  t.after(stop);
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`server exited with ${exited} before serving:\n${stderr}${stdout}`);
    try {
      const r = await request(url, ca.certPem, '/healthz');
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not answer /healthz within 20s:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, port, caPem: ca.certPem, pid: child.pid!, logs: () => stderr + stdout, stop };
}

export function kubeconfigYAML(server: string, caPem: string | undefined, user?: KeyPair): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: e2e',
    '  cluster:',
    `    server: ${server}`,
    ...(caPem ? [`    certificate-authority-data: ${b64(caPem)}`] : []),
    'users:',
    '- name: u',
    ...(user
      ? ['  user:', `    client-certificate-data: ${b64(user.certPem)}`, `    client-key-data: ${b64(user.keyPem)}`]
      : ['  user: {}']),
    'contexts:',
    '- name: e2e',
    '  context: {cluster: e2e, user: u, namespace: team-a}',
    'current-context: e2e',
    '',
  ].join('\n');
}

export interface Kubectl {
  (args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** A kubectl bound to one kubeconfig and its own fresh cache dir. */
export function kubectlFor(dir: string, name: string, server: string, caPem: string | undefined, user?: KeyPair): Kubectl {
  const kc = join(dir, `${name}.kubeconfig`);
  writeFileSync(kc, kubeconfigYAML(server, caPem, user), { mode: 0o600 });
  const cache = join(dir, `${name}-cache`);
  return (args, stdin) =>
    new Promise((resolve) => {
      const p = execFile('kubectl', ['--kubeconfig', kc, '--cache-dir', cache, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
      p.stdin!.on('error', () => {}); // kubectl may exit before reading its input
      p.stdin!.end(stdin ?? '');
    });
}

/** The status line kubectl -v=6 logs for a response, e.g. `POST .../commitrequests 201 Created`. */
export function responseStatus(stderr: string, method: string, pathPart: string): string | undefined {
  for (const line of stderr.split('\n')) {
    // kubectl >= 1.30: "Response" verb="POST" url="https://..." status="201 Created" milliseconds=3
    const m = /verb="([A-Z]+)" url="([^"]+)" status="([^"]+)"/.exec(line);
    if (m && m[1] === method && m[2]!.includes(pathPart)) return m[3];
    // older: POST https://... 201 Created in 3 milliseconds
    const o = /\b([A-Z]+) (https?:\/\/\S+) (\d{3} [A-Za-z ]+?) in \d+ milliseconds/.exec(line);
    if (o && o[1] === method && o[2]!.includes(pathPart)) return o[3];
  }
  return undefined;
}

export const gitTarget = (name: string) => ({
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'GitTarget',
  metadata: { name, namespace: 'team-a' },
  spec: { repository: { url: 'local:config' }, branch: 'main', path: 'tenants/a' },
});

export const commitRequest = (name: string, target: string, author?: { name: string; email: string }) => ({
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'CommitRequest',
  metadata: { name, namespace: 'team-a' },
  spec: { targetRef: { name: target }, message: `e2e ${name}`, ...(author ? { author } : {}) },
});

export const ASSERT_AUTHOR_RULE = (target: string) =>
  `apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["${target}"], verbs: ["assert-author"]`;
