// A tenant's kubeconfig Secrets as the attacker (test/security/kubeconfig-attack.test.ts asserts
// each refusal's exact reason and message; here it is the whole server under many of them): the
// tenant stores Secrets whose kubeconfig would run an exec plugin (plainly, behind a YAML merge
// key or an alias), read files from the server's disk, connect to cloud metadata addresses, or is
// huge, and points GitTargets at them. Each GitTarget must end Validated=False with its reason,
// no exec plugin may run (it would create a marker file) and no request may reach the tenant's
// listener (an HTTPS server in this process that every hostile kubeconfig names, apart from the
// metadata ones); meanwhile the run samples memory and other clients' /healthz as for every
// attack. Every Secret's text differs (the server keeps verdicts by the text's hash), so each is
// read, parsed and vetted, and read again at every re-check (every 10 s) while the run watches.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Attack, type Context, type Params } from './harness.js';
import { issueServerCert, makeCA } from '../../test/support/pki.js';

const NS = 'default';
const GTS = `/apis/configbutler.ai/v1alpha1/namespaces/${NS}/gittargets`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const copies = (p: Params) => Number(p.arg('kubeconfig-copies') ?? (p.quick ? 3 : 10));
// Just under what a Secret may hold (1 MiB of data, as Kubernetes allows).
const hugeBytes = (p: Params) => Number(p.arg('kubeconfig-huge-bytes') ?? 1_000_000);
const watchSeconds = (p: Params) => Number(p.arg('kubeconfig-watch-seconds') ?? (p.quick ? 12 : 25));

interface Listener {
  server: Server;
  url: string;
  caData: string;
  requests: number;
}

let listener: Listener | undefined;
let dir = '';

async function startListener(): Promise<Listener> {
  const ca = makeCA('tenant-listener-ca');
  const leaf = issueServerCert(ca, 'localhost');
  const l: Listener = { server: undefined as unknown as Server, url: '', caData: Buffer.from(ca.certPem).toString('base64'), requests: 0 };
  l.server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => {
    l.requests++;
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}');
  });
  await new Promise<void>((r) => l.server.listen(0, '127.0.0.1', r));
  l.url = `https://127.0.0.1:${(l.server.address() as AddressInfo).port}`;
  return l;
}

/** One hostile kind: its kubeconfig text (copy `i`), and the refusal it must get. */
interface Kind {
  name: string;
  reason: string;
  text(i: number, p: Params): string;
}

function kinds(l: Listener, marker: string): Kind[] {
  const cred = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 'exec-token' } });
  const exec = `{apiVersion: client.authentication.k8s.io/v1beta1, command: /bin/sh, args: [-c, ${JSON.stringify(`touch ${marker}; echo '${cred}'`)}]}`;
  const cluster = (server = l.url, ca = `certificate-authority-data: ${l.caData}`) => `clusters:\n- name: c\n  cluster: {server: "${server}", ${ca}}\n`;
  const tail = 'contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n';
  const config = (i: number, user: string, opts: { extra?: string; cluster?: string } = {}) =>
    `# copy ${i}\napiVersion: v1\nkind: Config\n${opts.extra ?? ''}${opts.cluster ?? cluster()}users:\n- name: u\n  user: ${user}\n${tail}`;
  const padding = (bytes: number) => {
    const entry = (j: number) => `- name: pad-${j}\n  cluster: {server: "https://pad-${j}.example", certificate-authority-data: ${l.caData}}\n`;
    let out = '';
    for (let j = 0; out.length < bytes; j++) out += entry(j);
    return out;
  };
  const serviceAccountToken = '/var/run/secrets/kubernetes.io/serviceaccount/token';
  return [
    { name: 'exec', reason: 'KubeConfigExecNotAllowed', text: (i) => config(i, `{exec: ${exec}}`) },
    { name: 'merge-exec', reason: 'KubeConfigYAMLFeatureNotAllowed', text: (i) => config(i, `{<<: {exec: ${exec}}}`) },
    { name: 'alias-exec', reason: 'KubeConfigYAMLFeatureNotAllowed', text: (i) => config(i, '{<<: *hidden}', { extra: `x-hidden: &hidden {exec: ${exec}}\n` }) },
    { name: 'auth-provider', reason: 'KubeConfigExecNotAllowed', text: (i) => config(i, '{auth-provider: {name: oidc}}') },
    { name: 'token-file', reason: 'KubeConfigFileReferenceNotAllowed', text: (i) => config(i, `{token-file: ${serviceAccountToken}}`) },
    { name: 'client-cert-file', reason: 'KubeConfigFileReferenceNotAllowed', text: (i) => config(i, '{client-certificate: /etc/ssl/private/server.crt, client-key: /etc/ssl/private/server.key}') },
    { name: 'ca-file', reason: 'KubeConfigFileReferenceNotAllowed', text: (i) => config(i, '{token: t}', { cluster: cluster(l.url, `certificate-authority: ${serviceAccountToken}`) }) },
    { name: 'metadata-ip', reason: 'KubeConfigEgressDenied', text: (i) => config(i, '{token: t}', { cluster: cluster('https://169.254.169.254') }) },
    { name: 'metadata-name', reason: 'KubeConfigEgressDenied', text: (i) => config(i, '{token: t}', { cluster: cluster('https://metadata.google.internal') }) },
    // A kubeconfig as large as a Secret may hold, its exec plugin after all the clusters:
    // refused for its size before it is parsed (src/controllers/source/kubeconfig-allowlist.ts, 64 KiB).
    { name: 'huge-exec', reason: 'KubeConfigInvalid', text: (i, p) => config(i, `{exec: ${exec}}`, { cluster: cluster() + padding(hugeBytes(p)) }) },
  ];
}

function gitTarget(name: string): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name },
    spec: {
      repository: { url: `local:${name}` },
      branch: 'main',
      path: name,
      source: { kubeConfig: { secretRef: { name } } },
      commit: { idleSeconds: 1 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [NS] }],
    },
  });
}

async function must(ctx: Context, method: string, path: string, body: string, want: number): Promise<void> {
  const r = await ctx.writer.request(method, path, { body, timeoutMs: 60_000 });
  if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
}

/** The Validated condition of every GitTarget of the run, by name. */
async function validated(ctx: Context): Promise<Map<string, { status: string; reason: string }>> {
  const r = await ctx.writer.request('GET', GTS, { timeoutMs: 60_000 });
  const out = new Map<string, { status: string; reason: string }>();
  for (const gt of (r.body?.items ?? []) as Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string; reason: string }> } }>) {
    const c = gt.status?.conditions?.find((x) => x.type === 'Validated');
    out.set(gt.metadata.name, { status: c?.status ?? '', reason: c?.reason ?? '' });
  }
  return out;
}

export const kubeconfigAttacks: Attack[] = [
  {
    key: 'kubeconfig',
    order: 11,
    title: 'GitTargets pointing at hostile kubeconfig Secrets',
    // Its 100 GitTargets fill namespace default's quota (100) by themselves: one left by an earlier
    // attack of the same run, still being deleted, made the last create a 403.
    serverArgs: ['--sandbox', '--max-gittargets-per-namespace=1000'],
    params: (p) => ({ copiesPerKind: copies(p), hugeBytes: hugeBytes(p), watchSeconds: watchSeconds(p) }),
    async prepare() {
      listener = await startListener();
      dir = mkdtempSync(join(tmpdir(), 'reverser-attack-kubeconfig-'));
    },
    note: (p) =>
      `The attacker stores ${copies(p)} Secrets of each of ten hostile kinds in namespace ${NS} (an exec plugin plainly, behind a YAML merge key and behind an alias; an auth-provider; a token file, a client certificate file and a CA file on the server's disk; a cloud metadata address and a metadata name; a ${(hugeBytes(p) / 1e6).toFixed(1)} MB kubeconfig with its exec plugin after the padding, refused for its size), every text different, and a GitTarget naming each. ` +
      `"During" lasts until every GitTarget is Validated=False, then ${watchSeconds(p)} s more of re-checks (each Secret is re-read every 10 s); then everything is deleted. The exec plugin would create a marker file; every other kubeconfig names an HTTPS listener in the bench process that counts requests.`,
    async run(ctx) {
      const l = listener!;
      const marker = join(dir, 'exec-ran');
      const ks = kinds(l, marker);
      const names: Array<{ name: string; kind: Kind }> = [];
      const started = Date.now();
      for (let i = 0; i < copies(ctx.params); i++) {
        for (const k of ks) {
          const name = `kc-${k.name}-${i}`;
          const text = k.text(i, ctx.params);
          await must(ctx, 'POST', SECRETS, JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { value: Buffer.from(text).toString('base64') } }), 201);
          await must(ctx, 'POST', GTS, gitTarget(name), 201);
          names.push({ name, kind: k });
        }
      }
      const createdS = (Date.now() - started) / 1000;
      let seen = new Map<string, { status: string; reason: string }>();
      const deadline = Date.now() + 180_000;
      while (Date.now() < deadline) {
        seen = await validated(ctx);
        if (names.every((n) => seen.get(n.name)?.status === 'False')) break;
        await sleep(250);
      }
      const refusedS = (Date.now() - started) / 1000;
      const refused = names.filter((n) => seen.get(n.name)?.status === 'False');
      const wrong = names.filter((n) => seen.get(n.name)?.reason !== n.kind.reason).map((n) => `${n.name}: ${seen.get(n.name)?.status ?? '?'} ${seen.get(n.name)?.reason ?? '?'}`);
      // The re-checks: each Secret read, hashed and (cached) vetted again every 10 s.
      await sleep(watchSeconds(ctx.params) * 1000);
      const after = await validated(ctx);
      const stillRefused = names.filter((n) => after.get(n.name)?.status === 'False' && after.get(n.name)?.reason === n.kind.reason).length;
      const execRan = existsSync(marker);
      const reached = l.requests;
      for (const n of names) await ctx.writer.request('DELETE', `${GTS}/${n.name}`, { timeoutMs: 60_000 });
      for (const n of names) await ctx.writer.request('DELETE', `${SECRETS}/${n.name}`, { timeoutMs: 60_000 });
      await new Promise<void>((r) => l.server.close(() => r()));
      l.server.closeAllConnections();
      rmSync(dir, { recursive: true, force: true });
      const total = names.length;
      return {
        text:
          `${total} Secrets and GitTargets created in ${createdS.toFixed(1)} s; ${refused.length} of ${total} Validated=False ${refused.length === total ? `within ${refusedS.toFixed(1)} s of the first create` : 'by the 180 s deadline'}` +
          `${wrong.length ? `; with another reason than expected: ${wrong.slice(0, 5).join(', ')}${wrong.length > 5 ? ` (+${wrong.length - 5})` : ''}` : ', each with its expected reason'}; ` +
          `${stillRefused} of ${total} still refused after ${watchSeconds(ctx.params)} s of re-checks; exec plugin ran: ${execRan ? 'YES' : 'no'}; requests reaching the tenant's listener: ${reached}`,
        rows: [
          { metric: 'GitTargets refused with the expected reason', unit: 'count', value: total - wrong.length, baseline: total, baselineLabel: 'created', target: 'all', met: wrong.length === 0 && stillRefused === total, notes: `${stillRefused} still refused after ${watchSeconds(ctx.params)} s of re-checks${wrong.length ? `; ${wrong.slice(0, 3).join(', ')}` : ''}` },
          { metric: 'all refused, from the first create', unit: 's', value: refusedS, digits: 1, notes: `${total} Secrets and GitTargets created in ${createdS.toFixed(1)} s` },
          { metric: 'exec plugins run', unit: 'count', value: execRan ? 1 : 0, target: '0', met: !execRan },
          { metric: "requests reaching the tenant's listener", unit: 'count', value: reached, target: '0', met: reached === 0 },
        ],
      };
    },
  },
];
