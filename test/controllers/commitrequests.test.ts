// CommitRequests against a real embedded store and a real `git http-backend` remote: outcomes,
// authorship, OnRequest windows, failures at once, TTL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { COMMITTER, CR, GT, configMap, createCommitRequest, createGitSecret, createGitTarget, gitServer, readyOf, startHarness, tempDir, waitFor } from './harness.js';
import type { KubeObject, Store } from '../../src/storage/index.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;

async function finished(store: Store, name: string, timeoutMs = 10_000): Promise<KubeObject> {
  return waitFor(`CommitRequest ${name} to finish`, async () => {
    const o = await store.get(CR, { cluster: '_', namespace: 'team-a', name });
    const r = readyOf(o);
    return r && r.reason !== 'Pending' ? o : undefined;
  }, timeoutMs);
}

function conditions(o: KubeObject): string[] {
  return ((o.status as { conditions: Array<Record<string, string>> }).conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).sort();
}

test('OnRequest: edits wait for a CommitRequest, then become exactly one commit authored by the submitter with the message verbatim', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'creq-onrequest-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  // idleSeconds 1 would close an Auto window between these edits; OnRequest ignores it.
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest', idleSeconds: 1 });
  for (const [i, name] of ['a', 'b', 'a', 'b', 'a'].entries()) {
    await h.running.sink!.add(key, [configMap(name, { v: String(i) })]);
    await new Promise((r) => setTimeout(r, 1200));
  }
  assert.equal((await git('/', 'ls-remote', remote.authURL('config'))).trim(), '', 'no commit before the request');
  await createCommitRequest(h.store, 'save-1', 'tenants', { message: 'Raise the replica count\n\nbecause load' }, { username: 'alice' });
  const cr = await finished(h.store, 'save-1');
  assert.deepEqual(conditions(cr), ['AuthorAttributed=True/Submitter', 'Pushed=True/Pushed', 'Ready=True/Committed', 'Reconciling=False/Committed', 'Stalled=False/Committed']);
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`alice <alice@noreply.cluster.local>|${BOT}|Raise the replica count`]);
  assert.equal((await git(c.dir, 'log', '-1', '--format=%B')).trim(), 'Raise the replica count\n\nbecause load');
  assert.equal(await c.read('clusters/dev/team-a/configmaps/a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team-a\ndata:\n  v: "4"\n');
  const st = cr.status as { sha: string; branch: string };
  assert.equal(st.sha, (await git(c.dir, 'rev-parse', 'HEAD')).trim());
  assert.equal(st.branch, 'main');
});

test('asserted author and claims extras; a second request waits for the next window; NothingToCommit; missing and not-Ready targets fail at once, one that mirrors nothing has nothing to commit', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'creq-authors-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await createGitTarget(h.store, 'unready', remote.url('config'), {}, false);

  // Asserted author wins over the submitter.
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  await createCommitRequest(h.store, 'asserted', 'tenants', { message: 'asserted', author: { name: 'Alice Doe', email: 'alice@example.com' } }, { username: 'alice' });
  const a = await finished(h.store, 'asserted');
  assert.deepEqual(conditions(a).filter((c) => c.startsWith('AuthorAttributed')), ['AuthorAttributed=True/AssertedAuthor']);

  // Display name and email from the identity's claims; closeDelaySeconds collects a later change.
  await h.running.sink!.add(key, [configMap('b', { v: '1' })]);
  await createCommitRequest(h.store, 'claims', 'tenants', { message: 'claims', closeDelaySeconds: 2 }, { username: 'oidc:u-123', extra: { 'configbutler.ai/claims/display-name': ['Bob Builder'], 'configbutler.ai/claims/email': ['bob@example.com'] } });
  // A second request while the window is claimed waits for the next window, then gives up: NothingToCommit.
  await waitFor('claims attached', async () => readyOf(await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'claims' }))?.reason === 'Pending');
  await createCommitRequest(h.store, 'second', 'tenants', { message: 'second', closeDelaySeconds: 1 }, { username: 'carol' });
  await h.running.sink!.add(key, [configMap('c', { v: '1' })]);
  const b = await finished(h.store, 'claims');
  assert.equal(readyOf(b)?.reason, 'Committed');
  const second = await finished(h.store, 'second');
  assert.equal(readyOf(second)?.reason, 'NothingToCommit');
  assert.deepEqual(conditions(second), ['AuthorAttributed=True/Submitter', 'Pushed=False/NothingToCommit', 'Ready=True/NothingToCommit', 'Reconciling=False/NothingToCommit', 'Stalled=False/NothingToCommit']);

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`Bob Builder <bob@example.com>|${BOT}|claims`, `Alice Doe <alice@example.com>|${BOT}|asserted`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml', 'clusters/dev/team-a/configmaps/c.yaml']);

  const t0 = Date.now();
  await createCommitRequest(h.store, 'missing', 'nope', { message: 'x' });
  const m = await finished(h.store, 'missing', 1000);
  assert.ok(Date.now() - t0 < 1000);
  assert.deepEqual(readyOf(m), { ...readyOf(m), status: 'False', reason: 'Failed', message: 'GitTarget "nope" not found in namespace "team-a"' });
  assert.deepEqual(conditions(m).filter((x) => x.startsWith('Stalled')), ['Stalled=True/Failed']);
  // A GitTarget without a status yet (created with the request): the request waits for it. This one
  // selects nothing (the mirror reports Ready, reason NothingToMirror): nothing to commit.
  await createCommitRequest(h.store, 'not-ready', 'unready', { message: 'x' });
  const nr = await finished(h.store, 'not-ready', 10_000);
  assert.deepEqual(conditions(nr).filter((x) => x.startsWith('Ready')), ['Ready=True/NothingToCommit']);
  // A GitTarget that reports not Ready fails the request at once, naming why.
  await createGitTarget(h.store, 'paused', remote.url('config'), {}, false);
  const paused = (await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'paused' }))!;
  await h.store.update(GT, { cluster: '_', namespace: 'team-a', name: 'paused' }, { ...paused, spec: { ...(paused.spec as object), suspend: true } }, Number(paused.metadata.resourceVersion));
  await waitFor('paused reports Suspended', async () => readyOf((await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'paused' }))!)?.reason === 'Suspended');
  await createCommitRequest(h.store, 'on-paused', 'paused', { message: 'x' });
  const p = await finished(h.store, 'on-paused', 5_000);
  assert.equal(readyOf(p)?.message, 'GitTarget "paused" is not Ready (Suspended: spec.suspend is true: nothing is mirrored or committed)');
});

test('AlreadyPresent when the window changes nothing; a finished request is deleted after ttlSecondsAfterFinished', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'creq-ttl-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  await createCommitRequest(h.store, 'first', 'tenants', { message: 'first' });
  await finished(h.store, 'first');
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]); // the same content again
  await createCommitRequest(h.store, 'again', 'tenants', { message: 'again', ttlSecondsAfterFinished: 1 });
  const again = await finished(h.store, 'again');
  assert.equal(readyOf(again)?.reason, 'AlreadyPresent');
  await waitFor('TTL deletion', async () => (await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'again' })) === undefined, 5_000);
  assert.ok(await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'first' }), 'the default TTL (1 h) keeps the other');
});

test('a crash between push and recording the outcome: the retry finds the commit in the branch and reports it, without a second commit', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'creq-idem-');
  const remote = await gitServer(t);
  const { createStore } = await import('../../src/storage/index.js');
  const { WindowRecords } = await import('../../src/controllers/windows/record.js');
  const { StoreWindowSink } = await import('../../src/controllers/windows/sink.js');
  const { GitEngine } = await import('../../src/git/index.js');
  const store = await createStore({ storage: 'embedded', dataDir: dir });
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  const records = new WindowRecords(store);
  await new StoreWindowSink(records, () => undefined).add(key, [configMap('a', { v: '1' }), configMap('b', { v: '1' })]);
  const cr = await createCommitRequest(store, 'save', 'tenants', { message: 'Save' }, { username: 'alice' });
  const author = { name: 'alice', email: 'alice@noreply.cluster.local' };
  // The state a crash right after the push leaves: the window closing with one attempt counted...
  await records.mutate(key, (r) => {
    const w = r.windows[0]!;
    w.request = { name: 'save', uid: cr.metadata.uid!, message: 'Save', author, authorKind: 'submitter', attachedAt: Date.now(), closeAt: Date.now() };
    w.closing = { reason: 'commit-request', at: Date.now(), attempts: 1 };
  });
  await store.close();
  // ...and the commit already in the remote.
  const pushed = await new GitEngine({ allowInsecureCredentials: true,  dataDir: tempDir(t, 'creq-idem-engine-'), committerName: COMMITTER.name, committerEmail: COMMITTER.email }).commit({
    repository: { url: remote.url('config'), credentials: { username: remote.username, password: remote.password } },
    branch: 'main',
    folder: 'clusters/dev',
    changes: [configMap('a', { v: '1' }), configMap('b', { v: '1' })],
    author,
    message: 'Save',
  });
  assert.equal(pushed.outcome, 'Committed');

  const h = await startHarness(t, { dataDir: dir });
  const done = await finished(h.store, 'save');
  assert.equal(readyOf(done)?.reason, 'Committed');
  assert.equal((done.status as { sha: string }).sha, pushed.outcome === 'Committed' ? pushed.sha : '');
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`alice <alice@noreply.cluster.local>|${BOT}|Save`]);
});

test('deleting the GitTarget fails its attached request at once and drops its pending changes', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'creq-deleted-');
  const remote = await gitServer(t);
  const h = await startHarness(t, { dataDir: dir });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  await createCommitRequest(h.store, 'save', 'tenants', { message: 'save', closeDelaySeconds: 60 });
  await waitFor('attached', async () => readyOf(await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'save' }))?.reason === 'Pending');
  const gt = await h.store.get({ group: 'configbutler.ai', resource: 'gittargets' }, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  await h.store.delete({ group: 'configbutler.ai', resource: 'gittargets' }, { cluster: '_', namespace: 'team-a', name: 'tenants' }, Number(gt!.metadata.resourceVersion));
  const done = await finished(h.store, 'save', 3_000);
  assert.equal(readyOf(done)?.message, 'GitTarget "tenants" not found in namespace "team-a"');
  const { WINDOWS_RESOURCE } = await import('../../src/controllers/windows/record.js');
  await waitFor('window record removed', async () => (await h.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' })) === undefined, 5_000);
  assert.equal((await git('/', 'ls-remote', remote.authURL('config'))).trim(), '');
});
