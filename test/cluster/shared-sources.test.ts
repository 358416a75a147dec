// Connections per source against a real kube-apiserver (src/controllers/source/transport.ts,
// sources.ts): N GitTargets in N namespaces, each reading through a kubeconfig Secret of its own
// namespace with the same content, each mirroring its namespace's ConfigMaps and, filtered by its
// own label selector, the ServiceAccounts of one namespace they all select. The server's
// descriptors stay within a constant of what it held before, and kube-apiserver sees one watch per
// distinct (type, namespace): N ConfigMap watches and one ServiceAccount watch, not 2N.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, succeeded } from '../support/kubectl.js';
import { gitDir } from '../git/git-cli.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { deployReverser, type Reverser } from './reverser.js';

const N = Number(process.env.SHARED_SOURCES_CLUSTER_N ?? 50);
const FD_ALLOWANCE = 40;

let cp: ControlPlane;
let srv: Reverser;
let admin: Kubectl;

const tenant = (i: number) => `src-${String(i).padStart(2, '0')}`;

function descriptors(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      readlinkSync(`/proc/${pid}/fd/${fd}`);
      n++;
    } catch {
      // closed while we looked
    }
  }
  return n;
}

/** Namespaced WATCH requests kube-apiserver serves for `resource` (apiserver_longrunning_requests). */
async function watches(resource: string): Promise<number> {
  const text = succeeded(await admin.run(['get', '--raw', '/metrics'], { timeoutMs: 30_000 }));
  let n = 0;
  for (const line of text.split('\n')) {
    const m = /^apiserver_longrunning_requests\{([^}]*)\} (\S+)$/.exec(line);
    if (m && m[1]!.includes(`resource="${resource}"`) && m[1]!.includes('verb="WATCH"') && m[1]!.includes('scope="namespace"')) n += Number(m[2]);
  }
  return n;
}

/** YAML documents, each a JSON object; the leading `---` makes kubectl read YAML, not a JSON stream. */
const documents = (items: unknown[]) => items.map((o) => `---\n${JSON.stringify(o)}\n`).join('');

before(async () => {
  cp = await startControlPlane();
  admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  srv = await deployReverser(cp);
});

after(async () => {
  admin?.cleanup();
  await srv?.stop();
  await cp?.stop();
});

test(`${N} GitTargets with the same kubeconfig Secret content: one connection pool, N + 1 watches on kube-apiserver`, { timeout: 600_000 }, async () => {
  // The same kubeconfig in every namespace: a user the cluster knows, with its own client certificate.
  const kubeconfig = readFileSync(cp.user('mirror-tenant', ['system:masters']).kubeconfig, 'utf8');
  const objects: unknown[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'src-shared' } },
    // Kubeconfig Secrets are read on the hosting cluster with the server's own ServiceAccount; the
    // shipped RBAC (apiservice/rbac.yaml) grants no Secrets, an operator grants them where tenants keep them.
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'test:kubeconfig-secret-reader' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'test:kubeconfig-secret-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'test:kubeconfig-secret-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reverser-apiserver', namespace: 'reverser-system' }],
    },
  ];
  for (let i = 0; i < N; i++) {
    const t = tenant(i);
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: t } });
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'own', namespace: t }, data: { tenant: t } });
    objects.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'source', namespace: t }, stringData: { value: kubeconfig } });
    objects.push({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `for-${t}`, namespace: 'src-shared', labels: { tenant: t } } });
  }
  succeeded(await admin.run(['create', '-f', '-'], { stdin: documents(objects), timeoutMs: 120_000 }));
  const before = { fds: descriptors(srv.pid), configmaps: await watches('configmaps'), serviceaccounts: await watches('serviceaccounts') };

  const targets = [];
  for (let i = 0; i < N; i++) {
    const t = tenant(i);
    targets.push({
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { name: t, namespace: t },
      spec: {
        repository: { url: `local:${t}` },
        branch: 'main',
        path: 'live',
        commit: { idleSeconds: 1 },
        source: { kubeConfig: { secretRef: { name: 'source' } } },
        resources: [
          { group: '', resource: 'configmaps', namespaces: [t] },
          { group: '', resource: 'serviceaccounts', namespaces: ['src-shared'], labelSelector: `tenant=${t}` },
        ],
      },
    });
  }
  const t0 = Date.now();
  succeeded(await admin.run(['create', '-f', '-'], { stdin: documents(targets), timeoutMs: 120_000 }));
  let notReady: unknown;
  await until(
    `all ${N} GitTargets Ready`,
    async () => {
      const r = await admin.run(['get', 'gittargets', '--all-namespaces', '-o', 'json'], { timeoutMs: 30_000 });
      if (r.code !== 0) return false;
      const items = JSON.parse(r.stdout).items as any[];
      const waiting = items.filter((o) => !o.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
      notReady = waiting[0] && { name: waiting[0].metadata.name, conditions: waiting[0].status?.conditions };
      return items.length === N && waiting.length === 0;
    },
    300_000,
    1_000,
  ).catch((e: Error) => {
    throw new Error(`${e.message}; first not Ready: ${JSON.stringify(notReady)}; server warnings:\n${srv.logs().split('\n').filter((l) => /"level":"(warn|error)"/.test(l)).slice(-15).join('\n')}`);
  });
  const readyMs = Date.now() - t0;
  const now = { fds: descriptors(srv.pid), configmaps: await watches('configmaps'), serviceaccounts: await watches('serviceaccounts') };
  console.log(JSON.stringify({ n: N, readyMs, before, now }));
  assert.deepEqual({ configmaps: now.configmaps - before.configmaps, serviceaccounts: now.serviceaccounts - before.serviceaccounts }, { configmaps: N, serviceaccounts: 1 });
  assert.ok(now.fds <= before.fds + FD_ALLOWANCE, `${now.fds} descriptors with ${N} GitTargets, ${before.fds} before (allowance ${FD_ALLOWANCE})`);

  for (const i of [0, N - 1]) {
    const t = tenant(i);
    const repo = join(srv.dataDir, 'git', t, `${t}.git`);
    assert.equal(await gitDir(repo, 'log', '--format=%s', 'main'), `Snapshot of ${t}/${t}: 2 objects\n`);
    assert.equal(await gitDir(repo, 'ls-tree', '-r', '--name-only', 'main'), `live/${t}/configmaps/own.yaml\nlive/src-shared/serviceaccounts/for-${t}.yaml\n`);
    assert.equal(await gitDir(repo, 'show', `main:live/${t}/configmaps/own.yaml`), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n  namespace: ${t}\ndata:\n  tenant: ${t}\n`);
  }
});
