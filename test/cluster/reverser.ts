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
  /** Our server's stderr (JSON log lines). */
  logs(): string;
  /** Parsed log lines whose msg contains `text`. */
  logLines(text: string): Array<{ level: string; msg: string }>;
  alive(): boolean;
  /** GET straight at our server (not through kube-apiserver). */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  stop(): Promise<void>;
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

export async function deployReverser(cp: ControlPlane, opts: { refreshMs?: number } = {}): Promise<Reverser> {
  const refreshMs = opts.refreshMs ?? 2000;
  const admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  try {
    // docs/deploy.md steps 3-5, in that order: the namespace, the serving certificate and its
    // Secret (with the command certs/generate.mjs prints), the manifests.
    mustSucceed(await admin.run(['apply', '-f', join(REPO_ROOT, 'apiservice/namespace.yaml')]), 'kubectl apply -f apiservice/namespace.yaml');
    const tlsDir = join(cp.dir, 'reverser-tls');
    const gen = await run(process.execPath, [join(REPO_ROOT, 'certs/generate.mjs'), '--out', tlsDir, '--service', SERVICE, '--namespace', NAMESPACE], REPO_ROOT);
    const printed = mustSucceed(gen, 'certs/generate.mjs').split('\n').find((l) => l.startsWith('kubectl '));
    if (!printed) throw new Error(`certs/generate.mjs printed no kubectl command:\n${gen.stdout}`);
    mustSucceed(await admin.run(printed.split(' ').slice(1)), printed);
    mustSucceed(await admin.run(['apply', '-k', join(REPO_ROOT, 'apiservice')]), 'kubectl apply -k apiservice/');

    // 3. No Pods here: the Service routes to this machine instead.
    const port = await freePort();
    mustSucceed(await admin.run(['-n', NAMESPACE, 'delete', 'service', SERVICE]), 'delete the ClusterIP Service');
    mustSucceed(await admin.run(['apply', '-f', '-'], {
      stdin: JSON.stringify({
        apiVersion: 'v1', kind: 'Service', metadata: { name: SERVICE, namespace: NAMESPACE },
        spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'https', port }] },
      }),
    }), 'ExternalName Service');

    // 4. The Pod's identity: a token of the ServiceAccount the manifests created.
    const token = mustSucceed(await admin.run(['-n', NAMESPACE, 'create', 'token', SERVICE, '--duration=2h']), 'kubectl create token').trim();
    const kubeconfig = cp.tokenKubeconfig('reverser-sa', token);

    // 5. The server, with the flags of apiservice/deployment.yaml that make sense off-cluster.
    const dataDir = join(cp.dir, 'reverser-data');
    mkdirSync(dataDir);
    const child: ChildProcess = spawn(process.execPath, [MAIN_JS, 'serve',
      `--secure-port=${port}`, '--bind-address=127.0.0.1',
      `--tls-cert-file=${join(tlsDir, 'tls.crt')}`, `--tls-private-key-file=${join(tlsDir, 'tls.key')}`,
      `--data-dir=${dataDir}`, `--kubeconfig=${kubeconfig}`, '--authorization-mode=Delegated',
      `--apiservice-service-port=${port}`, `--discovery-refresh-interval=${refreshMs}ms`, '--log-level=info',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    ownChild(child);
    let stderr = '';
    let exited = false;
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.stdout!.resume();
    child.once('exit', () => (exited = true));
    const caPem = readFileSync(join(tlsDir, 'ca.crt'), 'utf8');

    const get = (path: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path, method: 'GET', ca: caPem, servername: SERVICE_DNS, agent: false, headers }, (res) => {
          let t = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (t += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: t }));
        });
        req.setTimeout(15_000, () => req.destroy(new Error(`GET ${path}: no answer in 15 s`)));
        req.on('error', reject);
        req.end();
      });
    const reverser: Reverser = {
      port, caPem, refreshMs,
      logs: () => stderr,
      logLines: (text) => stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => String(l.msg).includes(text)),
      alive: () => !exited,
      get,
      async stop() {
        if (exited) return;
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await gone;
        clearTimeout(t);
      },
    };
    try {
      await until('our server /healthz', async () => {
        if (exited) throw new WaitAborted(`our server exited:\n${stderr}`);
        return (await get('/healthz')).status === 200;
      }, 60_000, 250);
      // 6. Registered by the server itself, and the aggregator reaches it.
      mustSucceed(await admin.run(['wait', '--for=condition=Available', `apiservice/${APISERVICE}`, '--timeout=120s'], { timeoutMs: 130_000 }), 'APIService Available');
      // kube-apiserver merges our OpenAPI into its own a moment after that (kubectl explain needs it).
      await until('our group in kube-apiserver /openapi/v3', async () => {
        const r = await cp.api('GET', '/openapi/v3');
        return r.status === 200 && `apis/configbutler.ai/v1alpha1` in (r.body?.paths ?? {});
      }, 60_000, 250);
    } catch (e) {
      await reverser.stop();
      throw new Error(`${(e as Error).message}\n--- our server's log\n${stderr}`);
    }
    return reverser;
  } finally {
    admin.cleanup();
  }
}
