// The git engine's worker thread starts with the first GitTarget that is not suspended, not with
// the controllers (src/controllers/index.ts): a server with nothing to commit does not hold it. A
// worker is an OS thread of the server process, so /proc/<pid>/status's thread count shows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, ns } from '../support/server.js';
import { until } from '../support/deadline.js';

const threads = (pid: number) => Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

/** The process's thread count once it has stayed the same for 2 s. */
async function settledThreads(pid: number): Promise<number> {
  let idle = threads(pid);
  for (let same = 0; same < 10; ) {
    await new Promise((r) => setTimeout(r, 200));
    const n = threads(pid);
    same = n === idle ? same + 1 : 0;
    idle = n;
  }
  return idle;
}

const gitTarget = (name: string, suspend: boolean) => ({
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'GitTarget',
  metadata: { name, namespace: 'lazy' },
  spec: { repository: { url: `local:${name}` }, branch: 'main', path: '.', resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['lazy'] }], suspend },
});

test('the git worker thread starts with the first GitTarget that is not suspended', { timeout: 120_000 }, async (t) => {
  const server = await startServer(['--sandbox', '--controllers=all']);
  t.after(() => server.stop());
  assert.equal((await server.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lazy' } } })).status, 201);
  assert.equal((await server.request('POST', ns('lazy'), { body: gitTarget('paused', true) })).status, 201);
  await until(async () => (await server.get(`${ns('lazy')}/paused`)).body?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.reason === 'Suspended'), 'the suspended GitTarget to be reported Suspended', 30_000);
  // Settled (the thread pool and V8's threads exist by now).
  const idle = await settledThreads(server.pid);
  assert.equal((await server.request('POST', ns('lazy'), { body: gitTarget('active', false) })).status, 201);
  await until(() => threads(server.pid) > idle, `a thread more than the ${idle} of the server with only a suspended GitTarget (the git worker)`, 30_000);
  await until(async () => (await server.get(`${ns('lazy')}/active`)).body?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'), 'the active GitTarget to be Ready', 60_000);
});

// A restart finds its GitTargets (the informer's first list) without starting a worker: their
// mirrors re-list, and with nothing changed there is nothing to commit (a worker loading beside
// the restart's own work delayed /readyz). An edit then starts it, and is committed.
test('a restart does not start the git worker for the GitTargets it finds; the first edit does', { timeout: 180_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lazy-restart-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startServer(['--sandbox', '--controllers=all'], { dataDir });
  let stopped = false;
  t.after(() => (stopped ? undefined : first.stop()));
  assert.equal((await first.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lazy' } } })).status, 201);
  assert.equal((await first.request('POST', '/api/v1/namespaces/lazy/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: { v: '1' } } })).status, 201);
  assert.equal((await first.request('POST', ns('lazy'), { body: gitTarget('active', false) })).status, 201);
  const lastCommit = async (s: typeof first) => (await s.get(`${ns('lazy')}/active`)).body?.status?.lastCommit?.sha as string | undefined;
  await until(async () => (await lastCommit(first)) !== undefined, 'the snapshot committed', 60_000);
  const snapshot = await lastCommit(first);
  await first.stop();
  stopped = true;

  const second = await startServer(['--sandbox', '--controllers=all'], { dataDir });
  t.after(() => second.stop());
  await until(async () => (await second.get(`${ns('lazy')}/active`)).body?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'), 'the GitTarget Ready after the restart', 60_000);
  // Settled. With no worker, the restart has none of its threads.
  const idle = await settledThreads(second.pid);
  assert.equal(await lastCommit(second), snapshot, 'nothing committed by the restart');
  assert.equal((await second.request('PATCH', '/api/v1/namespaces/lazy/configmaps/cm', { body: { data: { v: '2' } }, contentType: 'application/merge-patch+json' })).status, 200);
  await until(() => threads(second.pid) > idle, `a thread more than the ${idle} of the restarted server (the git worker, started by the edit)`, 30_000);
  await until(async () => ((await lastCommit(second)) ?? snapshot) !== snapshot, 'the edit committed', 60_000);
  const repo = join(dataDir, 'git');
  const log = execFileSync('git', ['--git-dir', execFileSync('find', [repo, '-type', 'd', '-name', 'active.git'], { encoding: 'utf8' }).trim(), 'show', 'main:lazy/configmaps/cm.yaml'], { encoding: 'utf8' });
  assert.equal(log, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: lazy\ndata:\n  v: "2"\n');
});
