// The git engine's worker thread starts with the first GitTarget that is not suspended, not with
// the controllers (src/controllers/index.ts): a server with nothing to commit does not hold it. A
// worker is an OS thread of the server process, so /proc/<pid>/status's thread count shows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, ns } from '../support/server.js';
import { until } from '../support/deadline.js';

const threads = (pid: number) => Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

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
  // Settled: the count stays the same for 2 s (the thread pool and V8's threads exist by now).
  let idle = threads(server.pid);
  for (let same = 0; same < 10; ) {
    await new Promise((r) => setTimeout(r, 200));
    const n = threads(server.pid);
    same = n === idle ? same + 1 : 0;
    idle = n;
  }
  assert.equal((await server.request('POST', ns('lazy'), { body: gitTarget('active', false) })).status, 201);
  await until(() => threads(server.pid) > idle, `a thread more than the ${idle} of the server with only a suspended GitTarget (the git worker)`, 30_000);
  await until(async () => (await server.get(`${ns('lazy')}/active`)).body?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'), 'the active GitTarget to be Ready', 60_000);
});
