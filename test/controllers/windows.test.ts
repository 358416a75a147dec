// Commit windows end to end against a real embedded store and a real `git http-backend` remote:
// changes enter through the WindowSink, the windows controller closes and commits them, and a
// fresh clone shows exactly what was pushed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { ManualClock } from '../support/clock.js';
import { withOverrides } from '../support/overrides.js';
import { WindowRecords, emptyRecord, recordSnapshot } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { createStore } from '../../src/storage/index.js';
import { StorageError, type Store } from '../../src/storage/types.js';
import { COMMITTER, GT, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;

async function remoteLog(url: string, branch = 'main'): Promise<string[]> {
  try {
    const out = await git('/', 'ls-remote', url, `refs/heads/${branch}`);
    if (!out.trim()) return [];
  } catch {
    return [];
  }
  const c = await cloneAndCheck(url, branch);
  c.cleanup();
  return c.log;
}

test('Auto: changes within idleSeconds become one commit; latest write per object wins, first-seen order kept', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-auto-');
  const remote = await gitServer(t);
  // The windows run on a ManualClock: the three changes are "within idleSeconds" by construction,
  // however long a loaded machine takes between them (on the wall clock, a second between two
  // store writes at load ~18 split them into two windows).
  const clock = new ManualClock(Date.now());
  const h = await startHarness(t, { dataDir: dir, clock });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  const sink = h.running.sink!;
  await sink.add(key, [configMap('a', { v: '1' })]);
  clock.advance(400);
  await sink.add(key, [configMap('b', { v: '1' })]);
  clock.advance(400);
  await sink.add(key, [configMap('a', { v: '2' })]);
  const gt = await waitFor('lastCommit', async () => {
    clock.advance(250);
    const o = await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' });
    return (o?.status as { lastCommit?: { sha: string } })?.lastCommit ? o : undefined;
  });
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`${BOT}|${BOT}|Update 2 objects in team-a/tenants`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
  assert.equal(await c.read('clusters/dev/team-a/configmaps/a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team-a\ndata:\n  v: "2"\n');
  assert.equal((await git(c.dir, 'log', '-1', '--format=%b')).trim(), '- update configmaps team-a/a\n- update configmaps team-a/b');
  const status = gt.status as { lastCommit: { sha: string }; pendingChanges: number; conditions: Array<{ type: string; status: string }> };
  assert.equal(status.lastCommit.sha, (await git(c.dir, 'rev-parse', 'HEAD')).trim());
  assert.equal(status.conditions.find((x) => x.type === 'RepositoryReady')?.status, 'True');
  await waitFor('pendingChanges 0', async () => {
    const o = await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' });
    return (o?.status as { pendingChanges?: number }).pendingChanges === 0;
  });
});

test('idleSeconds 0 commits each change alone; a snapshot is one commit and its landing is observable', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-zero-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  const sink = h.running.sink!;
  const landed: string[] = [];
  sink.onSnapshotLanded((_t, id, o) => landed.push(`${id}:${o.outcome}`));
  await sink.snapshot(key, { id: 'gen1', writes: Array.from({ length: 50 }, (_, i) => configMap(`cm-${String(i).padStart(2, '0')}`, { i: String(i) })) });
  await sink.snapshot(key, { id: 'gen1', writes: [] }); // the same id again: a no-op
  await waitFor('snapshot outcome', () => sink.snapshotOutcome(key, 'gen1'));
  await sink.add(key, [configMap('cm-01', { i: 'x' }), { op: 'delete', ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'cm-02' } }, configMap('cm-03', { i: 'y' })]);
  const log = await waitFor('4 commits', async () => {
    const l = await remoteLog(remote.authURL('config'));
    return l.length >= 4 ? l : undefined;
  }, 20_000, 200);
  assert.deepEqual(log, [
    `${BOT}|${BOT}|Update configmaps team-a/cm-03`,
    `${BOT}|${BOT}|Delete configmaps team-a/cm-02`,
    `${BOT}|${BOT}|Update configmaps team-a/cm-01`,
    `${BOT}|${BOT}|Snapshot of team-a/tenants: 50 objects`,
  ]);
  assert.deepEqual(landed, ['gen1:Committed']);
  const o = await sink.snapshotOutcome(key, 'gen1');
  assert.equal(o?.outcome, 'Committed');
  assert.match(o?.sha ?? '', /^[0-9a-f]{40}$/);
});

test('pending changes survive a restart of the process (embedded store on disk) and are committed once', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-restart-');
  const remote = await gitServer(t);
  const h1 = await startHarness(t, { dataDir: dir, controllers: 'none' });
  await createGitSecret(h1.store, remote);
  const { key } = await createGitTarget(h1.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  // No windows controller here: the sink of another process would write the same record.
  const { WindowRecords } = await import('../../src/controllers/windows/record.js');
  const { StoreWindowSink } = await import('../../src/controllers/windows/sink.js');
  const sink = new StoreWindowSink(new WindowRecords(h1.store), () => undefined);
  await sink.add(key, [configMap('a', { v: '1' }), configMap('b', { v: '1' })]);
  await h1.stop();
  assert.deepEqual(await remoteLog(remote.authURL('config')), []);
  const h2 = await startHarness(t, { dataDir: dir });
  void h2;
  const log = await waitFor('the commit after restart', async () => {
    const l = await remoteLog(remote.authURL('config'));
    return l.length ? l : undefined;
  }, 15_000, 200);
  assert.deepEqual(log, [`${BOT}|${BOT}|Update 2 objects in team-a/tenants`]);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await remoteLog(remote.authURL('config'))).length, 1);
});

test('maxAgeSeconds closes a window that never goes quiet (Auto) and an OnRequest window nobody requested', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-maxage-');
  const remote = await gitServer(t);
  // The windows run on a ManualClock: the test moves time, so the max age is what closes the
  // windows however slowly a loaded machine runs the commits.
  const clock = new ManualClock(Date.now());
  const lines: string[] = [];
  const h = await startHarness(t, { dataDir: dir, clock, logLines: (l) => lines.push(l) });
  await createGitSecret(h.store, remote);
  // A valid spec (maxAgeSeconds ≥ idleSeconds): an invalid one made every status write fail (422),
  // and a failing reconcile now waits out its backoff instead of re-running at once.
  const auto = await createGitTarget(h.store, 'busy', remote.url('config'), { idleSeconds: 2, maxAgeSeconds: 2 });
  const onreq = await createGitTarget(h.store, 'quiet', remote.url('config'), { mode: 'OnRequest', maxAgeSeconds: 2 });
  const opened = clock.now();
  await h.running.sink!.add(onreq.key, [configMap('q', { v: '1' }, 'team-b')]);
  // A change every 450 ms: the 2 s idle timer never fires, the 2 s max age does (between the 5th
  // and the 6th change, so the 6th opens the next window whoever closes the first).
  for (let i = 0; i < 6; i++) {
    if (i > 0) clock.advance(450);
    await h.running.sink!.add(auto.key, [configMap(`busy-${i}`, { v: '1' })]);
  }
  // The second window closes 2 s after it opened with the last change.
  const last = opened + 5 * 450 + 2_000;
  const log = await waitFor('both windows committed', async () => {
    if (clock.now() < last) clock.advance(Math.min(250, last - clock.now()));
    const l = await remoteLog(remote.authURL('config'));
    return l.length >= 3 ? l : undefined;
  }, 30_000, 100);
  assert.deepEqual(log.filter((l) => l.includes('team-b/q')), [`${BOT}|${BOT}|Update configmaps team-b/q`]);
  assert.deepEqual(log.filter((l) => l.includes('team-a/busy')), [`${BOT}|${BOT}|Update configmaps team-a/busy-5`, `${BOT}|${BOT}|Update 5 objects in team-a/busy`]);
  const closed = lines.map((l) => JSON.parse(l) as { msg: string; gitTarget?: string; reason?: string }).filter((l) => l.msg === 'window committed');
  assert.deepEqual(closed.map((l) => `${l.gitTarget} ${l.reason}`).sort(), ['team-a/busy max-age', 'team-a/busy max-age', 'team-a/quiet max-age']);
});

test('a snapshot outcome recorded by another replica reaches the listeners of its target, and only theirs, from the windows informer', { timeout: 30_000 }, async (t) => {
  const h = await startHarness(t, { dataDir: tempDir(t, 'windows-landed-') });
  const remote = await gitServer(t);
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  const sink = h.running.sink!;
  const mine: string[] = [];
  const others: string[] = [];
  const all: string[] = [];
  sink.onSnapshotLanded((_t, id, o) => mine.push(`${id}:${o.outcome}:${o.sha}`), key.uid);
  sink.onSnapshotLanded((_t, id) => others.push(id), 'another-uid');
  sink.onSnapshotLanded((_t, id) => all.push(id));
  // Another replica landed it: the outcome is in the Store only (no call to this replica's sink).
  const sha = 'a'.repeat(40);
  await new WindowRecords(h.store).mutate(key, (r) => recordSnapshot(r, 'g1-elsewhere', { outcome: 'Committed', sha, time: '2026-12-01T00:00:00Z' }));
  await waitFor('the landing seen', () => mine.length > 0, 10_000, 10);
  assert.deepEqual(mine, [`g1-elsewhere:Committed:${sha}`]);
  assert.deepEqual(others, []);
  // Listeners of every landing hear only this replica's own (commit.ts notifySnapshot), as before.
  assert.deepEqual(all, []);
});

test('while this replica records a landing, the record\'s event reaches the target\'s listeners only through notifySnapshot, after the status write', { timeout: 30_000 }, async (t) => {
  const h = await startHarness(t, { dataDir: tempDir(t, 'windows-hold-') });
  const sink = new StoreWindowSink(new WindowRecords(h.store), () => undefined);
  const key = { cluster: '_', namespace: 'team-a', name: 'held', uid: 'uid-held' };
  const heard: string[] = [];
  sink.onSnapshotLanded((_t, id, o) => heard.push(`${id}:${o.outcome}`), key.uid);
  const rec = emptyRecord(key);
  recordSnapshot(rec, 's1', { outcome: 'Committed', sha: 'c'.repeat(40), time: '2026-12-01T00:00:00Z' });
  sink.holdObserved(key.uid);
  sink.observeRecord(rec);
  assert.deepEqual(heard, []);
  sink.notifySnapshot(key, 's1', { outcome: 'Committed', sha: 'c'.repeat(40), time: '2026-12-01T00:00:00Z' });
  assert.deepEqual(heard, ['s1:Committed']);
  // Released by the notice: the next record event is delivered again (the mirror filters by id).
  sink.observeRecord(rec);
  assert.deepEqual(heard, ['s1:Committed', 's1:Committed']);
});

test('a commit whose status write fails (the store answers 503) still gets its lastCommit and RepositoryReady written, by the next reconcile, and is not committed again', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-owed-');
  const remote = await gitServer(t);
  const real = await createStore({ storage: 'embedded', dataDir: dir });
  // The store fails the first GitTarget write that carries a lastCommit, as Redis under load did
  // at 10,000 tenants (bench/scale): the record says the window landed, so no other step would
  // write the status again.
  let failed = 0;
  const update: Store['update'] = (res, key, obj, rv) => {
    if (res.resource === 'gittargets' && failed === 0 && (obj.status as { lastCommit?: unknown } | undefined)?.lastCommit) {
      failed++;
      return Promise.reject(new StorageError('Unavailable', 'injected: the primary is busy'));
    }
    return real.update(res, key, obj, rv);
  };
  // Every other call reaches the store itself, as itself (its state lives on it, not on a copy).
  const store = withOverrides(real, { update });
  const lines: string[] = [];
  const h = await startHarness(t, { dataDir: dir, store, logLines: (l) => lines.push(l) });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  const gt = await waitFor('lastCommit written after the failed write', async () => {
    const o = await real.get(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' });
    return (o?.status as { lastCommit?: { sha: string } })?.lastCommit ? o : undefined;
  }, 30_000, 100);
  assert.equal(failed, 1, 'the injected failure happened');
  const log = await remoteLog(remote.authURL('config'));
  assert.deepEqual(log, [`${BOT}|${BOT}|Update configmaps team-a/a`]);
  const status = gt.status as { lastCommit: { sha: string }; pendingChanges: number; conditions: Array<{ type: string; status: string; reason: string }> };
  const head = (await git('/', 'ls-remote', remote.authURL('config'), 'refs/heads/main')).split('\t')[0];
  assert.equal(status.lastCommit.sha, head);
  // The commit is logged once, though its status write failed: the line says the status is owed
  // and has no `status` milestone (bench/scale/stages.ts leaves those stages out).
  const committed = lines.map((l) => JSON.parse(l) as { msg: string; gitTarget?: string; sha?: string; statusOwed?: string; at?: { status?: number } }).filter((l) => l.msg === 'window committed');
  assert.deepEqual(committed.map((l) => [l.gitTarget, l.sha, l.statusOwed, l.at?.status]), [['team-a/tenants', head, 'storage is unavailable: injected: the primary is busy', undefined]]);
  assert.deepEqual(status.conditions.filter((x) => x.type === 'RepositoryReady').map((x) => `${x.status} ${x.reason}`), ['True Pushed']);
  assert.equal(status.pendingChanges, 0);
});

test('a landed commit the status does not name (its status write lost while the lease moved, or a stop between record and status) is written from the record by the lease holder, and not committed again', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-behind-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  const ref = { cluster: '_', namespace: 'team-a', name: 'tenants' };
  const landed = await waitFor('the first lastCommit', async () => {
    const o = await h.store.get(GT, ref);
    return (o?.status as { lastCommit?: { sha: string } })?.lastCommit && (o?.status as { pendingChanges?: number }).pendingChanges === 0 ? o : undefined;
  }, 30_000, 100);
  const sha = (landed.status as { lastCommit: { sha: string } }).lastCommit.sha;
  // The state 3 of 10,000 GitTargets were left in (bench/scale): the record says the window
  // landed, the status has neither lastCommit nor RepositoryReady. Stored as a status write that
  // lost would leave it; its event is what any later status write (the mirror's) would bring.
  const { lastCommit: _dropped, ...rest } = landed.status as Record<string, unknown> & { conditions: Array<{ type: string }> };
  await h.store.update(GT, ref, { ...landed, status: { ...rest, conditions: rest.conditions.filter((c) => c.type !== 'RepositoryReady') } }, Number(landed.metadata.resourceVersion));
  const repaired = await waitFor('lastCommit written again from the record', async () => {
    const o = await h.store.get(GT, ref);
    return (o?.status as { lastCommit?: { sha: string } })?.lastCommit ? o : undefined;
  }, 30_000, 100);
  const status = repaired.status as { lastCommit: { sha: string }; pendingChanges: number; conditions: Array<{ type: string; status: string; reason: string }> };
  assert.equal(status.lastCommit.sha, sha);
  assert.deepEqual(status.conditions.filter((x) => x.type === 'RepositoryReady').map((x) => `${x.status} ${x.reason}`), ['True Pushed']);
  assert.equal(status.pendingChanges, 0);
  assert.deepEqual(await remoteLog(remote.authURL('config')), [`${BOT}|${BOT}|Update configmaps team-a/a`]);
});
