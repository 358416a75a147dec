// Per-edit attribution across restarts and replicas, through real processes on one Redis: the
// server (--sandbox on Redis, so its sandbox objects outlive it too; the GitTarget names the
// hosting audit route) is SIGKILLed between the edit
// and the commit — with one change already in alice's window and one still waiting for its fact —
// and the restarted server commits both under the right authors. Then two replicas share the
// facts: a fact posted to the replica that does not hold the GitTarget names the author in the
// commit the other one makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startGitServer } from '../support/git-server.js';
import { startRedis } from '../support/redis.js';
import { until } from '../support/deadline.js';
import { git } from '../git/git-cli.js';
import { commits, ok } from '../mirror/harness.js';
import { auditEvent, eventList, startAuditServer, type AuditServer } from './ingest-support.js';

const SERVER = 'reverser-apiserver <reverser-apiserver@localhost>';

interface Obj {
  metadata: { uid: string; resourceVersion: string; name: string; namespace: string };
}

async function post(server: AuditServer, user: string, o: Obj): Promise<void> {
  const e = auditEvent({ verb: 'patch', user, namespace: o.metadata.namespace, name: o.metadata.name, uid: o.metadata.uid, responseRV: o.metadata.resourceVersion });
  e.stageTimestamp = new Date().toISOString();
  const r = await server.post('/audit-webhook', eventList([e]));
  assert.equal(r.status, 200, r.text);
}

test('SIGKILL between edit and commit (Redis): after restart the commits name alice and bob; two replicas share facts', { timeout: 240_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const remote = await startGitServer();
  t.after(() => remote.close());
  remote.createBareRepo('shared');
  const bare = join(remote.root, 'shared.git');
  const certDir = mkdtempSync(join(tmpdir(), 'join-replicas-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  // A long grace: bob's change is still waiting for its fact when the server dies.
  const args = ['--sandbox', '--controllers=all', '--storage=redis', `--redis-url=${redis.url}`, `--cert-dir=${certDir}`, '--log-level=info', '--attribution-grace=60s'];

  const a = await startAuditServer(t, args);
  const k = new Kubectl(kubectlBinary(), a.kubeconfig);
  t.after(() => k.cleanup());
  const as = async (user: string, args: string[], via = k): Promise<Obj> => JSON.parse(await ok(via, ['--as', user, ...args, '-o', 'json'])) as Obj;
  await ok(k, ['create', 'secret', 'generic', 'git-creds', '-n', 'default', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
  for (const n of ['one', 'two', 'three']) await ok(k, ['create', 'configmap', n, '-n', 'default', `--from-literal=key=${n}`]);
  await ok(k, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'live', namespace: 'default' },
    spec: {
      repository: { url: remote.url('shared'), secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'live',
      commit: { idleSeconds: 8, maxAgeSeconds: 600 },
      // The audit route, not the sandbox's own request-path facts (which would name the author at once).
      attribution: { auditRoute: 'hosting' },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['default'] }],
    },
  }));
  await ok(k, ['wait', '--for=condition=Ready', '-n', 'default', 'gittarget/live', '--timeout=60s']);
  await until(async () => (await commits(bare)).length === 1, 'the snapshot commit', 30_000, 100);

  const one = await as('alice', ['patch', 'configmap', 'one', '-n', 'default', '-p', '{"data":{"key":"alice"}}']);
  await post(a, 'alice', one);
  await as('bob', ['patch', 'configmap', 'two', '-n', 'default', '-p', '{"data":{"key":"bob"}}']).then(async (two) => {
    // alice's change joined her window, bob's waits for its fact: both only in the Store.
    await until(async () => {
      const gt = JSON.parse(await ok(k, ['get', 'gittarget', 'live', '-n', 'default', '-o', 'json']));
      return gt.status?.pendingChanges === 2;
    }, 'two pending changes', 15_000, 100);
    await a.kill();
    assert.equal((await commits(bare)).length, 1, 'nothing committed before the kill');

    const b = await startAuditServer(t, args);
    await post(b, 'bob', two);
    await until(async () => (await commits(bare)).length >= 3, 'both commits after the restart', 60_000, 200);
    const log = (await git(bare, 'log', '--format=%an <%ae>|%cn <%ce>|%s', 'main')).split('\n').filter(Boolean);
    assert.deepEqual(log.slice(0, 2), [`bob <bob@noreply.cluster.local>|${SERVER}|Update configmaps default/two`, `alice <alice@noreply.cluster.local>|${SERVER}|Update configmaps default/one`]);

    // A second replica; the fact goes to the one NOT holding the GitTarget.
    const c = await startAuditServer(t, args);
    await until(async () => [b, c].some((s) => s.stderr().includes('"lease acquired","lease":"gittarget/_/default/live/')), 'a holder', 30_000, 100);
    const holder = [b, c].find((s) => s.stderr().includes('"lease acquired","lease":"gittarget/_/default/live/'))!;
    const other = holder === b ? c : b;
    const before = (await commits(bare)).length;
    const kb = new Kubectl(kubectlBinary(), b.kubeconfig);
    t.after(() => kb.cleanup());
    const three = await as('carol', ['patch', 'configmap', 'three', '-n', 'default', '-p', '{"data":{"key":"carol"}}'], kb);
    await post(other, 'carol', three);
    await until(async () => (await commits(bare)).length > before, "carol's commit", 60_000, 200);
    assert.equal((await git(bare, 'log', '-1', '--format=%an <%ae>|%cn <%ce>|%s', 'main')).trim(), `carol <carol@noreply.cluster.local>|${SERVER}|Update configmaps default/three`);
  });
});
