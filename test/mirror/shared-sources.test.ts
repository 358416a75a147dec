// Connections per source, not per GitTarget (src/controllers/source/transport.ts, sources.ts,
// shared-watch.ts): N GitTargets on one source with the same credentials, each mirroring its own
// namespace plus, filtered by its own label selector, the ServiceAccounts of one namespace they all select. Measured on
// the mirroring server: its file descriptors stay within a constant of an idle server's, whatever
// N; the source sees one watch per distinct (type, namespace), N + 1, not one per stream (2N); and
// the mirrored content is exactly each target's own, also when an object moves between two
// targets' selections of the shared watch.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { until, waitMs } from '../support/deadline.js';
import { commits, files, git, ok, startMirroringServer, startSandbox, type Sandbox } from './harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

const N = Number(process.env.SHARED_SOURCES_N ?? 200);
/** Descriptors the N GitTargets may add to an idle server: a few HTTP/2 sessions and the git worker's files, not O(N). */
const FD_ALLOWANCE = 40;

let sandbox: Sandbox;
let server: StartedServer & { kubectl: Kubectl };
let idleFds: { all: number; sockets: number };

const tenant = (i: number) => `t-${String(i).padStart(3, '0')}`;

function descriptors(pid: number): { all: number; sockets: number } {
  let all = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while we looked
    }
    all++;
    if (target.startsWith('socket:')) sockets++;
  }
  return { all, sockets };
}

/** Open watches of `resource` the sandbox serves (its apiserver_longrunning_requests gauge). */
async function sourceWatches(resource: string): Promise<number> {
  const text = await ok(sandbox.kubectl, ['get', '--raw', '/metrics']);
  const line = text.split('\n').find((l) => l.startsWith(`apiserver_longrunning_requests{resource="${resource}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Many objects for one `kubectl create -f -`: YAML documents (JSON is YAML; the leading `---` makes kubectl read YAML, not a JSON stream); a v1 List needs the core group, which the main server lacks. */
const documents = (items: unknown[]) => items.map((o) => `---\n${JSON.stringify(o)}\n`).join('');

before(async () => {
  sandbox = await startSandbox();
  server = await startMirroringServer(sandbox);
  const objects: unknown[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shared' } }];
  for (let i = 0; i < N; i++) {
    const t = tenant(i);
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: t } });
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'own', namespace: t }, data: { tenant: t } });
    objects.push({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `for-${t}`, namespace: 'shared', labels: { tenant: t } } });
  }
  await ok(sandbox.kubectl, ['create', '-f', '-'], documents(objects));
  idleFds = descriptors(server.pid);
});

after(async () => {
  await server?.stop();
  await sandbox?.destroy();
});

test(`${N} GitTargets on one source: descriptors independent of N, N + 1 watches, each target's exact content`, { timeout: 600_000 }, async () => {
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
        resources: [
          { group: '', resource: 'configmaps', namespaces: [t] },
          { group: '', resource: 'serviceaccounts', namespaces: ['shared'], labelSelector: `tenant=${t}` },
        ],
      },
    });
  }
  const t0 = Date.now();
  await ok(server.kubectl, ['create', '-f', '-'], documents(targets));
  let ready = 0;
  await until(
    async () => {
      const r = await server.get('/apis/configbutler.ai/v1alpha1/gittargets');
      ready = (r.body.items as any[]).filter((o) => o.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')).length;
      return ready === N;
    },
    `all ${N} GitTargets Ready`,
    waitMs(300_000),
    500,
  );
  const readyMs = Date.now() - t0;

  const fds = descriptors(server.pid);
  const watches = { configmaps: await sourceWatches('configmaps'), serviceaccounts: await sourceWatches('serviceaccounts') };
  console.log(JSON.stringify({ n: N, readyMs, idleFds, fds, sourceWatches: watches }));
  // One list+watch per distinct type and namespace: N own namespaces, and the one they all share.
  assert.deepEqual(watches, { configmaps: N, serviceaccounts: 1 });
  assert.ok(fds.all <= idleFds.all + FD_ALLOWANCE, `${fds.all} descriptors with ${N} GitTargets, ${idleFds.all} idle (allowance ${FD_ALLOWANCE})`);
  assert.ok(fds.sockets <= idleFds.sockets + 10, `${fds.sockets} sockets with ${N} GitTargets, ${idleFds.sockets} idle`);

  // Exactly its own objects: its namespace's, and the shared one its selector matches.
  const repo = (i: number) => join(server.dataDir, 'git', tenant(i), `${tenant(i)}.git`);
  for (const i of [0, 7, 8, N - 1]) {
    const t = tenant(i);
    assert.deepEqual(await commits(repo(i)), [`Snapshot of ${t}/${t}: 2 objects`]);
    assert.deepEqual(await files(repo(i)), [`live/shared/serviceaccounts/for-${t}.yaml`, `live/${t}/configmaps/own.yaml`]);
    assert.equal(
      await git(repo(i), 'show', `main:live/shared/serviceaccounts/for-${t}.yaml`),
      `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: for-${t}\n  namespace: shared\n  labels:\n    tenant: ${t}\n`,
    );
  }

  // An object of the shared watch leaves t-007's selection for t-008's: one delete there, one write here.
  await ok(sandbox.kubectl, ['label', '--overwrite', 'serviceaccount', `for-${tenant(7)}`, '-n', 'shared', `tenant=${tenant(8)}`]);
  await until(async () => (await commits(repo(7))).length === 2 && (await commits(repo(8))).length === 2, 'the moved object committed in both repositories', 30_000, 100);
  assert.equal(await git(repo(7), 'diff', '--name-status', 'main~1', 'main'), `D\tlive/shared/serviceaccounts/for-${tenant(7)}.yaml\n`);
  assert.equal(await git(repo(8), 'diff', '--name-status', 'main~1', 'main'), `A\tlive/shared/serviceaccounts/for-${tenant(7)}.yaml\n`);
  assert.equal(
    await git(repo(8), 'show', `main:live/shared/serviceaccounts/for-${tenant(7)}.yaml`),
    `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: for-${tenant(7)}\n  namespace: shared\n  labels:\n    tenant: ${tenant(8)}\n`,
  );
  // Nobody else saw it: another target's repository still holds its snapshot only.
  assert.deepEqual(await commits(repo(0)), [`Snapshot of ${tenant(0)}/${tenant(0)}: 2 objects`]);

  // Deleting the GitTargets ends their watches: the source sees none left.
  await ok(server.kubectl, ['delete', 'gittargets', '--all', '--all-namespaces', '--wait=false']);
  await until(async () => (await sourceWatches('configmaps')) + (await sourceWatches('serviceaccounts')) === 0, 'the source to serve no watch of the mirrored types', 60_000, 250);
});
