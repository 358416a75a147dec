// Crashes of real server processes (SIGKILL) with pending changes and an attached CommitRequest:
// after a restart, or on the other replica, the commit lands once with the request's message and
// author, and the request reaches Committed. Embedded store and Redis.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore, type Store } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { startRedis } from '../support/redis.js';
import { ns, startServer, type StartedServer } from '../support/server.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { configMap, createGitSecret, createGitTarget, gitServer, waitFor } from './harness.js';
import type { GitServer } from '../support/git-server.js';

const COMMITTER_ARGS = ['--controllers=all', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example'];
const BOT = 'Reverser Bot <bot@reverser.example>';

/** GitTarget (OnRequest, Ready), credentials and two pending changes, written straight to the store. */
async function seed(store: Store, remote: GitServer): Promise<void> {
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  const sink = new StoreWindowSink(new WindowRecords(store), () => undefined);
  await sink.add(key, [configMap('a', { v: '1' }), configMap('b', { v: '2' })]);
}

async function createRequest(s: StartedServer, name: string, closeDelaySeconds: number): Promise<void> {
  const r = await s.request('POST', ns('team-a', 'commitrequests'), {
    // An asserted author (AlwaysAllow grants assert-author): it must survive the crash with the message.
    body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name }, spec: { targetRef: { name: 'tenants' }, message: 'Save both maps', author: { name: 'Alice Doe', email: 'alice@example.com' }, closeDelaySeconds } },
  });
  assert.equal(r.status, 201, r.text);
}

async function reason(s: StartedServer, name: string): Promise<string | undefined> {
  const r = await s.get(`${ns('team-a', 'commitrequests')}/${name}`);
  return r.body?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.reason;
}

async function assertOneCommit(t: TestContext, remote: GitServer, s: StartedServer, name: string): Promise<void> {
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`Alice Doe <alice@example.com>|${BOT}|Save both maps`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
  const cr = (await s.get(`${ns('team-a', 'commitrequests')}/${name}`)).body;
  const head = (await import('../git/git-cli.js')).git(c.dir, 'rev-parse', 'HEAD');
  assert.equal(cr.status.sha, (await head).trim());
}

test('embedded store: SIGKILL with pending changes and an attached CommitRequest; after restart the commit lands', { timeout: 90_000 }, async (t) => {
  const remote = await gitServer(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'crash-embedded-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = await createStore({ storage: 'embedded', dataDir });
  await seed(store, remote);
  await store.close();

  const a = await startServer(COMMITTER_ARGS, { dataDir });
  t.after(() => a.stop());
  await createRequest(a, 'save', 30);
  await waitFor('request attached', async () => (await reason(a, 'save')) === 'Pending');
  // A GET may show a write of the embedded store a few ms before its fsync; the attachment itself
  // was acknowledged before that status write started.
  await new Promise((r) => setTimeout(r, 200));
  await a.kill();

  const b = await startServer(COMMITTER_ARGS, { dataDir });
  t.after(() => b.stop());
  await waitFor('still pending after the restart', async () => (await reason(b, 'save')) === 'Pending', 10_000);
  await waitFor('Committed after restart', async () => (await reason(b, 'save')) === 'Committed', 45_000, 250);
  await assertOneCommit(t, remote, b, 'save');
});

test('Redis: SIGKILL and restart; then two replicas, SIGKILL the one holding the window and the other finishes it', { timeout: 120_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const remote = await gitServer(t);
  const store = await createStore({ storage: 'redis', redisUrl: redis.url });
  await seed(store, remote);
  await store.close();
  const certDir = mkdtempSync(join(tmpdir(), 'crash-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  const args = ['--storage=redis', `--redis-url=${redis.url}`, `--cert-dir=${certDir}`, '--log-level=info', ...COMMITTER_ARGS];

  // One replica, killed while the request collects; a restarted one finishes it.
  const a = await startServer(args);
  t.after(() => a.stop());
  await createRequest(a, 'save', 20);
  await waitFor('request attached', async () => (await reason(a, 'save')) === 'Pending');
  await a.kill();
  const b = await startServer(args);
  t.after(() => b.stop());
  await waitFor('Committed after restart', async () => (await reason(b, 'save')) === 'Committed', 45_000, 250);
  await assertOneCommit(t, remote, b, 'save');

  // Two replicas: whichever holds the GitTarget's lease is killed; the other takes over within 15 s.
  const c = await startServer(args);
  t.after(() => c.stop());
  const store2 = await createStore({ storage: 'redis', redisUrl: redis.url });
  t.after(() => store2.close());
  const gt = await store2.get({ group: 'configbutler.ai', resource: 'gittargets' }, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  const key = { cluster: '_', namespace: 'team-a', name: 'tenants', uid: gt!.metadata.uid! };
  await new StoreWindowSink(new WindowRecords(store2), () => undefined).add(key, [configMap('c', { v: '3' })]);
  await createRequest(b, 'save-2', 3);
  await waitFor('request attached', async () => (await reason(b, 'save-2')) === 'Pending');
  const holder = [b, c].find((s) => s.stderr().includes('"lease acquired","lease":"gittarget/_/team-a/tenants/'));
  assert.ok(holder, 'one replica holds the lease');
  const other = holder === b ? c : b;
  const killedAt = Date.now();
  await holder.kill();
  await waitFor('Committed by the other replica', async () => (await reason(other, 'save-2')) === 'Committed', 30_000, 250);
  const took = Date.now() - killedAt;
  assert.ok(took < 15_000 + 3_000, `takeover and commit took ${took} ms`);
  const clone = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(clone.cleanup);
  assert.deepEqual(clone.log, [`Alice Doe <alice@example.com>|${BOT}|Save both maps`, `Alice Doe <alice@example.com>|${BOT}|Save both maps`]);
  assert.deepEqual(clone.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml', 'clusters/dev/team-a/configmaps/c.yaml']);
});
