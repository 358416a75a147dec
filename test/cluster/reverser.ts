// Runs our server against a real control plane the way a Pod would (docs/deploy.md's steps):
// `kubectl apply -k apiservice/`, a serving certificate from certs/generate.mjs put into the Secret
// with the command it prints, a token of the reverser-apiserver ServiceAccount from `kubectl create
// token`, `--authorization-mode=Delegated` with the requestheader CA read from the real
// kube-system/extension-apiserver-authentication, and self-registration of the APIService.
// There are no Pods here, so the Service becomes an ExternalName pointing at 127.0.0.1 (the
// aggregator resolves it to https://127.0.0.1:<APIService port> and checks our certificate for
// reverser-apiserver.reverser-system.svc).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { freePort } from '../support/net.js';
import { REPO_ROOT, WaitAborted, ownChild, until, type ControlPlane } from './fixture.js';

export const NAMESPACE = 'reverser-system';
export const SERVICE = 'reverser-apiserver';
export const SERVICE_DNS = `${SERVICE}.${NAMESPACE}.svc`;
export const APISERVICE = 'v1alpha1.configbutler.ai';
const MAIN_JS = join(REPO_ROOT, 'dist/src/cli/main.js');

export interface Reverser {
  port: number;
  caPem: string;
  refreshMs: number;
  dataDir: string;
  /** The flags it was started with (after `serve`). */
  args: string[];
  /** Our server's stderr (JSON log lines). */
  logs(): string;
  /** Parsed log lines whose msg contains `text`. */
  logLines(text: string): Array<{ level: string; msg: string }>;
  alive(): boolean;
  /** The process id (its /proc entries: descriptors). */
  pid: number;
  /** GET straight at our server (not through kube-apiserver). */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  stop(): Promise<void>;
  /** SIGKILL: no graceful shutdown. */
  kill(): Promise<void>;
  /** Ends this process (SIGTERM, or SIGKILL: no graceful shutdown) and starts it again with the same port, data directory and flags. */
  restart(signal?: 'SIGTERM' | 'SIGKILL'): Promise<Reverser>;
}

export function mustSucceed(r: RunResult, what: string): string {
  if (r.code !== 0 || r.stderr !== '') throw new Error(`${what}: exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r.stdout;
}

function run(cmd: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0, stdout, stderr });
    });
  });
}

/** A serving certificate made with certs/generate.mjs, and the command it prints to put it in a Secret. */
export interface ServingTLS {
  dir: string;
  caPem: string;
  secretCommand: string;
}

/** certs/generate.mjs for our Service, into `dir` (before the control plane, when kube-apiserver must trust it from its start). */
export async function generateServingTLS(dir: string): Promise<ServingTLS> {
  const gen = await run(process.execPath, [join(REPO_ROOT, 'certs/generate.mjs'), '--out', dir, '--service', SERVICE, '--namespace', NAMESPACE], REPO_ROOT);
  const secretCommand = mustSucceed(gen, 'certs/generate.mjs').split('\n').find((l) => l.startsWith('kubectl '));
  if (!secretCommand) throw new Error(`certs/generate.mjs printed no kubectl command:\n${gen.stdout}`);
  return { dir, caPem: readFileSync(join(dir, 'ca.crt'), 'utf8'), secretCommand };
}

export interface DeployOptions {
  refreshMs?: number;
  /** Made beforehand with generateServingTLS; default: made now under the control plane's directory. */
  tls?: ServingTLS;
  /** More flags for every process of the deployment (storage, committer). */
  args?: string[];
  /** More flags for the first process only (its audit listener, its controllers). */
  serverArgs?: string[];
}

/** What a further process of the same deployment needs: another replica, or the same one restarted. */
export interface ProcessOptions {
  /** Default: a free port. */
  port?: number;
  /** Default: a new directory (each replica needs its own). */
  dataDir?: string;
  /** Flags of this process, after the deployment's. */
  args?: string[];
  /** How this process reaches kube-apiserver (default its URL): a relay, to slow the source down. */
  kubeAPI?: string;
}

export interface Deployment {
  /** The first process (the APIService's port). */
  server: Reverser;
  /** Starts another process of the same deployment (same certificate, identity, APIService port). */
  start(opts?: ProcessOptions): Promise<Reverser>;
}

export async function deployReverser(cp: ControlPlane, opts: DeployOptions = {}): Promise<Reverser> {
  return (await deploy(cp, opts)).server;
}

export async function deploy(cp: ControlPlane, opts: DeployOptions = {}): Promise<Deployment> {
  const refreshMs = opts.refreshMs ?? 2000;
  const admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  try {
    // docs/deploy.md steps 3-5, in that order: the namespace, the serving certificate and its
    // Secret (with the command certs/generate.mjs prints), the manifests.
    mustSucceed(await admin.run(['apply', '-f', join(REPO_ROOT, 'apiservice/namespace.yaml')]), 'kubectl apply -f apiservice/namespace.yaml');
    const tls = opts.tls ?? (await generateServingTLS(join(cp.dir, 'reverser-tls')));
    mustSucceed(await admin.run(tls.secretCommand.split(' ').slice(1)), tls.secretCommand);
    mustSucceed(await admin.run(['apply', '-k', join(REPO_ROOT, 'apiservice')]), 'kubectl apply -k apiservice/');

    // 3. No Pods here: the Service routes to this machine instead.
    const apiPort = await freePort();
    mustSucceed(await admin.run(['-n', NAMESPACE, 'delete', 'service', SERVICE]), 'delete the ClusterIP Service');
    mustSucceed(await admin.run(['apply', '-f', '-'], {
      stdin: JSON.stringify({
        apiVersion: 'v1', kind: 'Service', metadata: { name: SERVICE, namespace: NAMESPACE },
        spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'https', port: apiPort }] },
      }),
    }), 'ExternalName Service');

    // 4. The Pod's identity: a token of the ServiceAccount the manifests created.
    const token = mustSucceed(await admin.run(['-n', NAMESPACE, 'create', 'token', SERVICE, '--duration=2h']), 'kubectl create token').trim();
    const kubeconfig = cp.tokenKubeconfig('reverser-sa', token);
    let replicas = 0;
    let relayed = 0;
    let starts = 0;
    const start = async (p: ProcessOptions = {}): Promise<Reverser> => {
      const later = starts++ > 0;
      const dataDir = p.dataDir ?? join(cp.dir, `reverser-data${replicas++ ? `-${replicas}` : ''}`);
      mkdirSync(dataDir, { recursive: true });
      const port = p.port ?? (await freePort());
      // 5. The server, with the flags of apiservice/deployment.yaml that make sense off-cluster.
      // Every process registers the APIService with the port of the first (the Service's).
      // The APIService's process is ready when kube-apiserver serves our group through it (the
      // first start's caller waits for more: the APIService registered and Available, OpenAPI).
      const served = later && port === apiPort
        ? async () => (await cp.api('GET', '/apis/configbutler.ai/v1alpha1/gittargets?limit=1')).status === 200
        : undefined;
      return launch({
        port, dataDir, caPem: tls.caPem, refreshMs, served, args: [
          `--secure-port=${port}`, '--bind-address=127.0.0.1',
          `--tls-cert-file=${join(tls.dir, 'tls.crt')}`, `--tls-private-key-file=${join(tls.dir, 'tls.key')}`,
          `--data-dir=${dataDir}`, `--kubeconfig=${p.kubeAPI ? cp.tokenKubeconfig(`reverser-sa-${++relayed}`, token, p.kubeAPI) : kubeconfig}`, '--authorization-mode=Delegated',
          `--apiservice-service-port=${apiPort}`, `--discovery-refresh-interval=${refreshMs}ms`, '--log-level=info',
          ...(opts.args ?? []), ...(p.args ?? []),
        ],
      });
    };
    const server = await start({ port: apiPort, args: opts.serverArgs });
    try {
      // 6. Registered by the server itself, and the aggregator reaches it.
      mustSucceed(await admin.run(['wait', '--for=condition=Available', `apiservice/${APISERVICE}`, '--timeout=120s'], { timeoutMs: 130_000 }), 'APIService Available');
      // kube-apiserver merges our OpenAPI into its own a moment after that (kubectl explain needs it).
      await until('our group in kube-apiserver /openapi/v3', async () => {
        const r = await cp.api('GET', '/openapi/v3');
        return r.status === 200 && `apis/configbutler.ai/v1alpha1` in (r.body?.paths ?? {});
      }, 60_000, 250);
    } catch (e) {
      await server.stop();
      throw new Error(`${(e as Error).message}\n--- our server's log\n${server.logs()}`);
    }
    return { server, start };
  } finally {
    admin.cleanup();
  }
}

/** Starts one server process and waits for its /healthz. */
/**
 * Starts one server process and waits for its /healthz, and, when `served` is given (the process
 * behind the APIService's port), for kube-apiserver to serve our group through it again: after a
 * restart the aggregator answers 503 until its availability check has seen the new process.
 */
async function launch(c: { port: number; dataDir: string; caPem: string; refreshMs: number; args: string[]; served?: () => Promise<boolean> }): Promise<Reverser> {
  const child: ChildProcess = spawn(process.execPath, [MAIN_JS, 'serve', ...c.args], { stdio: ['ignore', 'pipe', 'pipe'] });
  ownChild(child);
  let stderr = '';
  let exited = false;
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout!.resume();
  child.once('exit', () => (exited = true));
  const get = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port: c.port, path, method: 'GET', ca: c.caPem, servername: SERVICE_DNS, agent: false, headers }, (res) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (x: string) => (t += x));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: t }));
      });
      req.setTimeout(15_000, () => req.destroy(new Error(`GET ${path}: no answer in 15 s`)));
      req.on('error', reject);
      req.end();
    });
  const end = async (signal: NodeJS.Signals) => {
    if (exited) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(t);
  };
  const reverser: Reverser = {
    port: c.port, caPem: c.caPem, refreshMs: c.refreshMs, dataDir: c.dataDir, args: c.args,
    logs: () => stderr,
    logLines: (text) => stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => String(l.msg).includes(text)),
    alive: () => !exited,
    pid: child.pid!,
    get,
    stop: () => end('SIGTERM'),
    kill: () => end('SIGKILL'),
    async restart(signal = 'SIGTERM') {
      await end(signal);
      return launch(c);
    },
  };
  try {
    await until('our server /healthz', async () => {
      if (exited) throw new WaitAborted(`our server exited:\n${stderr}`);
      return (await get('/healthz')).status === 200;
    }, 60_000, 250);
    if (c.served) {
      await until('kube-apiserver serving configbutler.ai through this process', async () => {
        if (exited) throw new WaitAborted(`our server exited:\n${stderr}`);
        return c.served!();
      }, 90_000, 250);
    }
  } catch (e) {
    await reverser.stop();
    throw new Error(`${(e as Error).message}\n--- our server's log\n${stderr}`);
  }
  return reverser;
}
