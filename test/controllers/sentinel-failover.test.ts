// A running server's controllers over a Sentinel failover: a CommitRequest is attached (Pending),
// the Redis primary is SIGKILLed while the request collects, the sentinels promote a replica, and
// the same server process (no restart) commits it exactly once, with the request's message and
// author. The store-level failover tests are test/storage/redis-sentinel.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { until } from '../support/deadline.js';
import { startRedisSentinel } from '../support/redis-ha.js';
import { ns, startServer, type StartedServer } from '../support/server.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { configMap, createGitSecret, createGitTarget, gitServer, waitFor } from './harness.js';

const BOT = 'Reverser Bot <bot@reverser.example>';

async function reason(s: StartedServer, name: string): Promise<string | undefined> {
  const r = await s.get(`${ns('team-a', 'commitrequests')}/${name}`);
  return r.body?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.reason;
}

test('sentinel: SIGKILL the Redis primary while a CommitRequest collects; the same server commits it once', { timeout: 110_000 }, async (t) => {
  const g = await startRedisSentinel({ replicas: 2 });
  t.after(() => g.stop());
  const url = `${g.url}&waitReplicas=1`;
  const remote = await gitServer(t);
  const store = await createStore({ storage: 'redis', redisUrl: url });
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await new StoreWindowSink(new WindowRecords(store), () => undefined).add(key, [configMap('a', { v: '1' }), configMap('b', { v: '2' })]);
  await store.close();
  const certDir = mkdtempSync(join(tmpdir(), 'sentinel-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));

  const s = await startServer(['--storage=redis', `--redis-url=${url}`, `--cert-dir=${certDir}`, '--controllers=all', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example']);
  t.after(() => s.stop());
  const r = await s.request('POST', ns('team-a', 'commitrequests'), {
    body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name: 'save' }, spec: { targetRef: { name: 'tenants' }, message: 'Save both maps', author: { name: 'Alice Doe', email: 'alice@example.com' }, closeDelaySeconds: 8 } },
  });
  assert.equal(r.status, 201, r.text);
  await waitFor('request attached', async () => (await reason(s, 'save')) === 'Pending', 20_000);

  const ports = g.replicas.map((x) => x.port);
  await g.primary.kill();
  await until(async () => ports.includes(await g.primaryPort()), 'the sentinels to promote a replica', 30_000, 100);
  await waitFor('Committed after the failover', async () => (await reason(s, 'save').catch(() => undefined)) === 'Committed', 60_000, 250);
  assert.ok(s.alive(), 'the server never exited');

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`Alice Doe <alice@example.com>|${BOT}|Save both maps`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
});
