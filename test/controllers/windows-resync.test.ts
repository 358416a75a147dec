// A re-list (the mirror's snapshot after a restart or a takeover) meeting an open window, against a
// real embedded store, the windows controller and a `git http-backend` remote (reconcile.ts): the
// open window keeps its author and changes, the re-list commits only what changed unseen, and an
// object changed again while nobody watched leaves the window for the resync commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloneAndCheck } from '../git/git-cli.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { addChanges } from '../../src/controllers/windows/transitions.js';
import { policyOf } from '../../src/controllers/windows/policy.js';
import { COMMITTER, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;
const ALICE = { name: 'Alice Doe', email: 'alice@example.com' };

async function remoteLog(url: string): Promise<string[]> {
  const c = await cloneAndCheck(url, 'main');
  c.cleanup();
  return c.log;
}

test('Auto: a re-list with an attributed open window keeps the window and its author, and adds no commit when nothing changed unseen', { timeout: 60_000 }, async (t) => {
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: tempDir(t, 'resync-auto-') });
  await createGitSecret(h.store, remote);
  const { obj, key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 2 });
  const sink = h.running.sink!;
  await sink.snapshot(key, { id: 'g1-first', writes: [configMap('a', { v: '1' }), configMap('b', { v: '1' }), configMap('c', { v: '1' })] });
  await waitFor('the first snapshot', () => sink.snapshotOutcome(key, 'g1-first'), 20_000);
  // alice's audited edit, open in her window; then the server restarts and re-lists the same state.
  const records = new WindowRecords(h.store);
  await records.mutate(key, (r) => addChanges(r, [configMap('a', { v: '2' })], policyOf(obj), Date.now(), { authorKey: 'user:alice', author: ALICE, kind: 'audit' }));
  await sink.snapshot(key, { id: 'g1-relisted', writes: [configMap('a', { v: '2' }), configMap('b', { v: '1' }), configMap('c', { v: '1' })] });
  const rec = await records.get(key);
  assert.deepEqual(rec?.windows.map((w) => [w.kind, w.resync ?? false, w.authorKey, w.changes.map((c) => c.key)]), [
    ['snapshot', true, '', ['|ConfigMap|team-a|b', '|ConfigMap|team-a|c']],
    ['changes', false, 'user:alice', ['|ConfigMap|team-a|a']],
  ]);
  assert.equal(rec?.windows[1].closing, undefined, "alice's window is still open");
  const log = await waitFor('alice committed', async () => {
    const l = await remoteLog(remote.authURL('config'));
    return l.length >= 2 ? l : undefined;
  }, 20_000, 200);
  assert.deepEqual(log, [`Alice Doe <alice@example.com>|${BOT}|Update configmaps team-a/a`, `${BOT}|${BOT}|Snapshot of team-a/tenants: 3 objects`]);
  assert.equal((await sink.snapshotOutcome(key, 'g1-relisted'))?.outcome, 'AlreadyPresent');
});

test('OnRequest: an object changed again while nobody watched leaves the window; the resync commits its current state', { timeout: 60_000 }, async (t) => {
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: tempDir(t, 'resync-conflict-') });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  const sink = h.running.sink!;
  await sink.snapshot(key, { id: 'g1-first', writes: [configMap('a', { v: '1' }), configMap('b', { v: '1' })] });
  await waitFor('the first snapshot', () => sink.snapshotOutcome(key, 'g1-first'), 20_000);
  await sink.add(key, [configMap('a', { v: '2' }), configMap('b', { v: '2' })]);
  // Re-listed: b as pending (stays), a changed again unseen (leaves the window).
  await sink.snapshot(key, { id: 'g1-relisted', writes: [configMap('a', { v: '3' }), configMap('b', { v: '2' })] });
  const log = await waitFor('the resync', async () => {
    const l = await remoteLog(remote.authURL('config'));
    return l.length >= 2 ? l : undefined;
  }, 20_000, 200);
  assert.deepEqual(log, [`${BOT}|${BOT}|Resync: changes made while reverser-apiserver was not watching`, `${BOT}|${BOT}|Snapshot of team-a/tenants: 2 objects`]);
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.equal(await c.read('clusters/dev/team-a/configmaps/a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team-a\ndata:\n  v: "3"\n');
  assert.equal(await c.read('clusters/dev/team-a/configmaps/b.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: team-a\ndata:\n  v: "1"\n');
  const rec = await new WindowRecords(h.store).get(key);
  assert.deepEqual(rec?.windows.map((w) => [w.kind, w.closing?.reason, w.changes.map((x) => x.key)]), [['changes', undefined, ['|ConfigMap|team-a|b']]]);
});
