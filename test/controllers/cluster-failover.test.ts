// A running server's controllers over a Redis Cluster failover: a CommitRequest is attached
// (Pending), the primary that owns the store's hash slot is SIGKILLed while the request collects,
// the Cluster promotes its replica, and the same server process (no restart) commits it exactly
// once, with the request's message and author. The Sentinel twin is sentinel-failover.test.ts; the
// store-level Cluster failover is test/storage/redis-cluster.test.ts. No waitReplicas here: the
// promoted primary has no replica left to confirm a write (docs/storage.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { until } from '../support/deadline.js';
import { startRedisCluster } from '../support/redis-ha.js';
import { ns, startServer, type StartedServer } from '../support/server.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { configMap, createGitSecret, createGitTarget, gitServer, waitFor } from './harness.js';

const BOT = 'Reverser Bot <bot@reverser.example>';
// Every key of the store carries the hash tag of its prefix on a Cluster (src/storage/keys.ts).
const PREFIX = 'creq';

async function reason(s: StartedServer, name: string): Promise<string | undefined> {
  const r = await s.get(`${ns('team-a', 'commitrequests')}/${name}`);
  return r.body?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.reason;
}

test('cluster: SIGKILL the slot owner while a CommitRequest collects; the same server commits it once', { timeout: 150_000 }, async (t) => {
  const g = await startRedisCluster();
  t.after(() => g.stop());
  const remote = await gitServer(t);
  const store = await createStore({ storage: 'redis', redisUrl: g.url, redisKeyPrefix: PREFIX });
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await new StoreWindowSink(new WindowRecords(store), () => undefined).add(key, [configMap('a', { v: '1' }), configMap('b', { v: '2' })]);
  await store.close();
  const certDir = mkdtempSync(join(tmpdir(), 'cluster-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));

  const s = await startServer(['--storage=redis', `--redis-url=${g.url}`, `--redis-key-prefix=${PREFIX}`, `--cert-dir=${certDir}`, '--controllers=all', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example']);
  t.after(() => s.stop());
  const r = await s.request('POST', ns('team-a', 'commitrequests'), {
    body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name: 'save' }, spec: { targetRef: { name: 'tenants' }, message: 'Save both maps', author: { name: 'Alice Doe', email: 'alice@example.com' }, closeDelaySeconds: 8 } },
  });
  assert.equal(r.status, 201, r.text);
  await waitFor('request attached', async () => (await reason(s, 'save')) === 'Pending', 20_000);

  const owner = await g.slotOwner(`{${PREFIX}}`);
  const killedAt = Date.now();
  await owner.kill();
  await until(async () => (await g.slotOwner(`{${PREFIX}}`).catch(() => owner)) !== owner, 'the Cluster to promote the replica of the slot owner', 30_000, 100);
  t.diagnostic(`slot owner :${owner.port} SIGKILLed; replica promoted after ${Date.now() - killedAt} ms`);
  await waitFor('Committed after the failover', async () => (await reason(s, 'save').catch(() => undefined)) === 'Committed', 60_000, 250);
  t.diagnostic(`committed ${Date.now() - killedAt} ms after the kill`);
  assert.ok(s.alive(), 'the server never exited');

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`Alice Doe <alice@example.com>|${BOT}|Save both maps`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
  // Still exactly one commit a window later: nothing re-committed by a retry after the failover.
  await new Promise((res) => setTimeout(res, 3_000));
  const again = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(again.cleanup);
  assert.deepEqual(again.log, c.log);
});
