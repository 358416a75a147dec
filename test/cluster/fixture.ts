// A real Kubernetes control plane for tests: etcd, kube-apiserver (RBAC, service-account signing,
// front proxy with a proxy client certificate, a client CA for test users) and
// kube-controller-manager (service-account tokens, namespace deletion, garbage collection, root CA
// ConfigMaps, ClusterRole aggregation), built from their Go modules by test/cluster/build.sh. Free ports, one temporary
// directory, every wait bounded, everything stopped by stop().
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/net.js';
import { waitMs } from '../support/deadline.js';
import { issueClientCert, issueServerCert, makeCA, type CA, type KeyPair } from '../support/pki.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD_SCRIPT = join(REPO_ROOT, 'test/cluster/build.sh');

/** How long a test waits for test/cluster/build.sh (a cold build is many minutes on 2 cores). */
export const BUILD_DEADLINE_MS = Number(process.env.REVERSER_CLUSTER_BUILD_TIMEOUT_MS ?? 30 * 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Thrown from an `until` callback when waiting longer cannot help (a process exited). */
export class WaitAborted extends Error {}

/**
 * Polls `fn` until it returns a truthy value; throws naming `what` after `ms` (scaled by
 * TEST_WAIT_SCALE), or at once on WaitAborted. Unlike test/support/deadline.ts `until`, an error
 * thrown by `fn` counts as "not yet" (a process still starting refuses connections).
 */
export async function until<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, ms = 30_000, every = 200): Promise<T> {
  ms = waitMs(ms);
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      if (e instanceof WaitAborted) throw e;
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await sleep(every);
  }
}

/** Runs build.sh `target` (waiting for a build already running) and returns the binaries' directory. */
export function buildBinaries(target: 'control-plane' | 'helm', deadlineMs = BUILD_DEADLINE_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [BUILD_SCRIPT, target], { timeout: deadlineMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`test/cluster/build.sh ${target} failed or took longer than ${deadlineMs / 1000} s: ${err.message}\n${stderr.slice(-4000)}`));
        return;
      }
      resolve(stdout.trim().split('\n').pop()!);
    });
  });
}

export const CHART = join(REPO_ROOT, 'charts/reverser-apiserver');

export async function helmBinary(): Promise<string> {
  return join(await buildBinaries('helm'), 'helm');
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command in the repository root (60 s at most). */
export function run(cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: REPO_ROOT, timeout: 60_000, env: { PATH: process.env.PATH, HOME: process.env.HOME } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0, stdout, stderr });
    });
  });
}

export interface ClusterUser {
  name: string;
  kubeconfig: string;
  cert: KeyPair;
}

export interface ControlPlane {
  dir: string;
  url: string;
  /** The cluster CA: signs kube-apiserver's serving certificate and the test users' client certificates. */
  ca: CA;
  frontProxyCA: CA;
  /** With `audit`: the CA of kube-apiserver's audit client certificate (our --audit-client-ca-file). */
  audit?: { ca: CA; caFile: string; webhookKubeconfig: string };
  admin: ClusterUser;
  /** A kubeconfig for a user authenticated by a client certificate from the cluster CA. */
  user(name: string, groups?: string[]): ClusterUser;
  /** A kubeconfig that authenticates with a bearer token (e.g. from `kubectl create token`); `server` replaces the URL (a relay in front of kube-apiserver). */
  tokenKubeconfig(name: string, token: string, server?: string): string;
  /** JSON call to kube-apiserver as admin (or another user); `contentType` for a PATCH (default application/json). */
  api(method: string, path: string, body?: unknown, as?: ClusterUser, contentType?: string): Promise<{ status: number; body: any; text: string }>;
  /** Log of one component. */
  log(component: 'etcd' | 'kube-apiserver' | 'kube-controller-manager'): string;
  stop(): Promise<void>;
}

function kubeconfigYAML(server: string, caPem: string, user: { certPem?: string; keyPem?: string; token?: string }): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const cred = user.token
    ? `    token: ${user.token}`
    : `    client-certificate-data: ${b64(user.certPem!)}\n    client-key-data: ${b64(user.keyPem!)}`;
  return [
    'apiVersion: v1', 'kind: Config',
    'clusters:', '- name: test', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(caPem)}`,
    'users:', '- name: user', '  user:', cred,
    'contexts:', '- name: test', '  context: {cluster: test, user: user}',
    'current-context: test', '',
  ].join('\n');
}

interface Proc {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited: boolean;
}

// If this test process ends without stop() (a runner deadline, a crash), the control plane must not
// outlive it: its processes are killed on exit and on SIGTERM/SIGINT.
const orphans = new Set<ChildProcess>();
const orphanDirs = new Set<string>();
let exitHooked = false;
function killOrphansOnExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const killAll = () => {
    for (const c of orphans) c.kill('SIGKILL');
    for (const d of orphanDirs) rmSync(d, { recursive: true, force: true });
  };
  process.once('exit', killAll);
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(128 + (sig === 'SIGTERM' ? 15 : 2));
    });
  }
}

/** Registers a child process to be killed if this process ends first. */
export function ownChild(child: ChildProcess): void {
  killOrphansOnExit();
  orphans.add(child);
  child.once('exit', () => orphans.delete(child));
}

async function stopProc(p: Proc): Promise<void> {
  if (p.exited) return;
  const gone = new Promise<void>((r) => p.child.once('exit', () => r()));
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(t);
}

/**
 * kube-apiserver's webhook audit backend (batch mode), posting to https://127.0.0.1:<port><path>
 * with a client certificate from an audit CA the fixture makes (ControlPlane.audit), configured with
 * the files we ship (apiservice/audit/): the policy, and the webhook kubeconfig template filled in.
 * kube-apiserver reads its webhook kubeconfig once, at start: the receiver's port and serving CA
 * are fixed now.
 */
export interface AuditWebhook {
  port: number;
  /** Default /audit-webhook (the hosting route). */
  path?: string;
  /** Verifies the receiver's serving certificate, for `serverName`. */
  serverCAPem: string;
  serverName: string;
  /** Default apiservice/audit/policy.yaml (what we ship). */
  policyFile?: string;
  /** --audit-webhook-batch-max-wait; default 1s. */
  batchMaxWait?: string;
}

export const SHIPPED_AUDIT_POLICY = join(REPO_ROOT, 'apiservice/audit/policy.yaml');
export const SHIPPED_WEBHOOK_KUBECONFIG = join(REPO_ROOT, 'apiservice/audit/webhook-kubeconfig.yaml');

export async function startControlPlane(opts: { binDir?: string; audit?: AuditWebhook } = {}): Promise<ControlPlane> {
  const bin = opts.binDir ?? (await buildBinaries('control-plane'));
  const dir = mkdtempSync(join(tmpdir(), 'reverser-cluster-'));
  killOrphansOnExit();
  orphanDirs.add(dir);
  const pki = join(dir, 'pki');
  mkdirSync(pki);
  const procs: Proc[] = [];
  const write = (name: string, text: string, mode = 0o644) => {
    const p = join(pki, name);
    writeFileSync(p, text, { mode });
    return p;
  };
  const spawnLogged = (name: string, args: string[]): Proc => {
    const logFile = join(dir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const child = spawn(join(bin, name), args, { stdio: ['ignore', fd, fd], cwd: dir });
    closeSync(fd);
    ownChild(child);
    const p: Proc = { name, child, logFile, exited: false };
    child.once('exit', () => (p.exited = true));
    procs.push(p);
    return p;
  };
  const log = (name: string) => {
    try {
      return readFileSync(join(dir, `${name}.log`), 'utf8');
    } catch {
      return '';
    }
  };
  const stopAll = async () => {
    for (const p of procs.slice().reverse()) await stopProc(p);
    rmSync(dir, { recursive: true, force: true });
    orphanDirs.delete(dir);
  };
  const alive = (p: Proc, what: string) => {
    if (p.exited) throw new WaitAborted(`${p.name} exited while waiting for ${what}:\n${log(p.name).slice(-6000)}`);
  };

  try {
    // PKI: cluster CA, front-proxy CA, service-account key pair.
    const ca = makeCA('reverser-test-cluster-ca');
    const frontProxyCA = makeCA('reverser-test-front-proxy-ca');
    const serving = issueServerCert(ca, 'kube-apiserver', ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'], ['127.0.0.1', '10.0.0.1']);
    const proxyClient = issueClientCert(frontProxyCA, 'front-proxy-client');
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const files = {
      ca: write('ca.crt', ca.certPem),
      frontProxyCA: write('front-proxy-ca.crt', frontProxyCA.certPem),
      servingCrt: write('apiserver.crt', serving.certPem),
      servingKey: write('apiserver.key', serving.keyPem, 0o600),
      proxyCrt: write('front-proxy-client.crt', proxyClient.certPem),
      proxyKey: write('front-proxy-client.key', proxyClient.keyPem, 0o600),
      saKey: write('sa.key', sa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), 0o600),
      saPub: write('sa.pub', sa.publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    };

    // The audit webhook's kubeconfig, as docs/attribution.md (and apiservice/audit/) tells an operator to write it.
    let audit: ControlPlane['audit'];
    const auditFlags: string[] = [];
    if (opts.audit) {
      const a = opts.audit;
      const auditCA = makeCA('reverser-test-audit-ca');
      const client = issueClientCert(auditCA, 'kube-apiserver-audit');
      const caFile = write('audit-ca.crt', auditCA.certPem);
      // The shipped template (apiservice/audit/webhook-kubeconfig.yaml), filled in as docs/attribution.md
      // tells an operator to: the address, the certificate name, the files beside it.
      const dirOf = '/etc/kubernetes/reverser-audit/';
      write('audit-server-ca.crt', a.serverCAPem);
      write('audit-client.crt', client.certPem);
      write('audit-client.key', client.keyPem, 0o600);
      const template = readFileSync(SHIPPED_WEBHOOK_KUBECONFIG, 'utf8');
      const filled = template
        .replace('https://AUDIT_SERVICE_CLUSTER_IP:9444/audit-webhook', `https://127.0.0.1:${a.port}${a.path ?? '/audit-webhook'}`)
        .replace('tls-server-name: reverser-apiserver.reverser-system.svc', `tls-server-name: ${a.serverName}`)
        .replace(`${dirOf}ca.crt`, join(pki, 'audit-server-ca.crt'))
        .replace(`${dirOf}client.crt`, join(pki, 'audit-client.crt'))
        .replace(`${dirOf}client.key`, join(pki, 'audit-client.key'));
      if (filled.includes(dirOf) || filled.includes('AUDIT_SERVICE_CLUSTER_IP')) throw new Error(`${SHIPPED_WEBHOOK_KUBECONFIG} has placeholders the fixture does not fill:\n${filled}`);
      const webhookKubeconfig = write('audit-webhook.kubeconfig', filled, 0o600);
      audit = { ca: auditCA, caFile, webhookKubeconfig };
      auditFlags.push(
        `--audit-policy-file=${a.policyFile ?? SHIPPED_AUDIT_POLICY}`,
        `--audit-webhook-config-file=${webhookKubeconfig}`,
        '--audit-webhook-mode=batch', `--audit-webhook-batch-max-wait=${a.batchMaxWait ?? '1s'}`,
      );
    }

    const [etcdClient, etcdPeer, apiPort, kcmPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const url = `https://127.0.0.1:${apiPort}`;

    const etcd = spawnLogged('etcd', [
      '--name=test', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`, `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=test=http://127.0.0.1:${etcdPeer}`, '--unsafe-no-fsync', '--log-level=warn',
    ]);
    await until('etcd /health', async () => {
      alive(etcd, 'etcd /health');
      return (await plainGet(`http://127.0.0.1:${etcdClient}/health`)).includes('"health":"true"');
    }, 60_000);

    const apiserver = spawnLogged('kube-apiserver', [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${apiPort}`,
      `--tls-cert-file=${files.servingCrt}`, `--tls-private-key-file=${files.servingKey}`,
      `--client-ca-file=${files.ca}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${files.saPub}`, `--service-account-signing-key-file=${files.saKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      `--requestheader-client-ca-file=${files.frontProxyCA}`, '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${files.proxyCrt}`, `--proxy-client-key-file=${files.proxyKey}`,
      // Not --enable-aggregator-routing: its endpoint resolver refuses ExternalName Services
      // ("unsupported service type"), and Endpoints may not point at loopback, so with no Pods the
      // only route to a server on this machine is the cluster resolver's ExternalName support.
      // No kubelets or kube-proxy: nothing would serve the kubernetes Service's endpoints.
      '--endpoint-reconciler-type=none',
      '--profiling=false',
      ...auditFlags,
    ]);

    const admin = (() => {
      const cert = issueClientCert(ca, 'test-admin', ['system:masters']);
      const kubeconfig = join(dir, 'admin.kubeconfig');
      writeFileSync(kubeconfig, kubeconfigYAML(url, ca.certPem, cert), { mode: 0o600 });
      return { name: 'test-admin', kubeconfig, cert };
    })();
    const api = (method: string, path: string, body?: unknown, as: ClusterUser = admin, contentType = 'application/json') =>
      new Promise<{ status: number; body: any; text: string }>((resolve, reject) => {
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const req = httpsRequest(`${url}${path}`, {
          method, ca: ca.certPem, cert: as.cert.certPem, key: as.cert.keyPem, agent: false,
          headers: { accept: 'application/json', ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any;
            try { parsed = JSON.parse(text); } catch { parsed = undefined; }
            resolve({ status: res.statusCode ?? 0, body: parsed, text });
          });
          res.on('error', reject);
        });
        req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
        req.on('error', reject);
        req.end(payload);
      });
    await until('kube-apiserver /readyz', async () => {
      alive(apiserver, 'kube-apiserver /readyz');
      return (await api('GET', '/readyz')).status === 200;
    }, 180_000, 500);

    const kcmCert = issueClientCert(ca, 'system:kube-controller-manager');
    const kcmKubeconfig = join(dir, 'kcm.kubeconfig');
    writeFileSync(kcmKubeconfig, kubeconfigYAML(url, ca.certPem, kcmCert), { mode: 0o600 });
    const kcm = spawnLogged('kube-controller-manager', [
      `--kubeconfig=${kcmKubeconfig}`, `--authentication-kubeconfig=${kcmKubeconfig}`, `--authorization-kubeconfig=${kcmKubeconfig}`,
      '--bind-address=127.0.0.1', `--secure-port=${kcmPort}`,
      `--service-account-private-key-file=${files.saKey}`, `--root-ca-file=${files.ca}`,
      '--use-service-account-credentials=true',
      // clusterrole-aggregation folds our aggregate-to-edit/view ClusterRoles into edit and view.
      '--controllers=namespace,garbagecollector,serviceaccount,serviceaccount-token,root-ca-cert-publisher,clusterrole-aggregation',
      '--leader-elect=false',
      // Discovery of aggregated groups (ours) is re-read on this cadence by the GC and namespace controllers.
      '--profiling=false',
    ]);
    // The controllers work: the default ServiceAccount and the root CA ConfigMap appear.
    await until('kube-controller-manager: default ServiceAccount and kube-root-ca.crt', async () => {
      alive(kcm, 'kube-controller-manager');
      const [sa, cm] = await Promise.all([
        api('GET', '/api/v1/namespaces/default/serviceaccounts/default'),
        api('GET', '/api/v1/namespaces/default/configmaps/kube-root-ca.crt'),
      ]);
      return sa.status === 200 && cm.status === 200;
    }, 120_000, 500);

    return {
      dir, url, ca, frontProxyCA, audit, admin, api,
      user(name, groups = []) {
        const cert = issueClientCert(ca, name, groups);
        const kubeconfig = join(dir, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
        writeFileSync(kubeconfig, kubeconfigYAML(url, ca.certPem, cert), { mode: 0o600 });
        return { name, kubeconfig, cert };
      },
      tokenKubeconfig(name, token, server = url) {
        const p = join(dir, `${name}.kubeconfig`);
        writeFileSync(p, kubeconfigYAML(server, ca.certPem, { token }), { mode: 0o600 });
        return p;
      },
      log: (c) => log(c),
      stop: stopAll,
    };
  } catch (e) {
    const logs = ['etcd', 'kube-apiserver', 'kube-controller-manager'].map((n) => `--- ${n} (last lines)\n${log(n).slice(-3000)}`).join('\n');
    await stopAll();
    throw new Error(`${(e as Error).message}\n${logs}`);
  }
}

function plainGet(u: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(u, { timeout: 5000 }, (res) => {
      let t = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (t += c));
      res.on('end', () => resolve(t));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
