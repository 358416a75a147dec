// The join against the real windows and CommitRequest controllers, a real Store (embedded on disk,
// or Redis) and a real `git http-backend` remote. Changes enter through the WindowSink as the
// mirror hands them over (with their source uid and resourceVersion); facts come from an
// in-memory facts source (what kube-apiserver's audit webhook would have posted); what was pushed
// is read back with the git CLI as exact `%an <%ae>|%cn <%ce>|%s` lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { COMMITTER, CR, GT, createCommitRequest, createGitSecret, createGitTarget, gitServer, readyOf, startHarness, tempDir, waitFor } from '../controllers/harness.js';
import { MemoryFacts, fact } from '../support/memory-facts.js';
import { startRedis } from '../support/redis.js';
import { createStore, type KubeObject, type Store } from '../../src/storage/index.js';
import { WINDOWS_RESOURCE, WindowRecords, type WindowRecord } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import type { PendingChange } from '../../src/controllers/windows/types.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;
const ALICE = 'alice <alice@noreply.cluster.local>';
const ALICE_CLAIMS = 'Alice Doe <alice@example.com>';
const BOB = 'bob <bob@noreply.cluster.local>';
const UNRESOLVED = 'unknown (attribution unresolved) <attribution-unresolved@configbutler.invalid>';
const ALICE_EXTRA = { 'configbutler.ai/claims/display-name': ['Alice Doe'], 'configbutler.ai/claims/email': ['alice@example.com'] };

/** A mirrored ConfigMap write as the mirror hands it to the sink: sanitized object plus its source. */
function edit(name: string, uid: string, resourceVersion: string, data: Record<string, string>): PendingChange {
  return { op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data }, source: { uid, resourceVersion, resource: 'configmaps' } };
}

async function remoteLog(url: string): Promise<string[]> {
  const out = await git('/', 'ls-remote', url, 'refs/heads/main').catch(() => '');
  if (!out.trim()) return [];
  const c = await cloneAndCheck(url, 'main');
  c.cleanup();
  return c.log;
}

async function logOf(url: string, n: number, timeoutMs = 20_000): Promise<string[]> {
  return waitFor(`${n} commits`, async () => {
    const l = await remoteLog(url);
    return l.length >= n ? l : undefined;
  }, timeoutMs, 150);
}

async function record(store: Store, name = 'tenants'): Promise<WindowRecord | undefined> {
  return (await store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name })) as WindowRecord | undefined;
}

async function metric(reg: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const m = (await reg.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

/**
 * Waits until the metric holds `want`, then asserts it: the windows controller counts a commit
 * after its push, so the remote can show the commit a moment before the counter moves.
 */
async function metricReaches(reg: Registry, name: string, labels: Record<string, string>, want: number): Promise<void> {
  const seen = await waitFor(`${name}${JSON.stringify(labels)} to reach ${want}`, async () => {
    const v = await metric(reg, name, labels);
    return v >= want ? v : undefined;
  }, 15_000);
  assert.equal(seen, want);
}

function condition(obj: KubeObject | undefined, type: string): { status: string; reason: string; message: string } | undefined {
  return ((obj?.status as { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } | undefined)?.conditions ?? []).find((c) => c.type === type);
}

test('two authors: their edits become two commits in order, each authored by its user; facts already there add no wait', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-two-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const metrics = new Registry();
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 30_000 }, metrics });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  await facts.put([
    fact({ user: 'alice', extra: ALICE_EXTRA, uid: 'uid-a', resourceVersion: '10', name: 'a' }),
    fact({ user: 'bob', uid: 'uid-b', resourceVersion: '11', name: 'b' }),
    fact({ user: 'alice', uid: 'uid-c', resourceVersion: '12', name: 'c' }),
    fact({ user: 'alice', uid: 'uid-d', resourceVersion: '13', name: 'd' }),
  ]);
  const sink = h.running.sink!;
  const started = Date.now();
  await sink.add(key, [edit('a', 'uid-a', '10', { v: '1' })]);
  // Resolved at add time: straight into alice's window, nothing staged.
  assert.equal((await record(h.store))?.staging, undefined);
  await sink.add(key, [edit('b', 'uid-b', '11', { v: '1' })]);
  await sink.add(key, [edit('c', 'uid-c', '12', { v: '1' }), edit('d', 'uid-d', '13', { v: '1' })]);
  const log = await logOf(remote.authURL('config'), 3);
  // The grace is 30 s: had anything waited for it, the commits would be far later.
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  assert.deepEqual(log, [
    `alice <alice@noreply.cluster.local>|${BOT}|Update 2 objects in team-a/tenants`,
    `${BOB}|${BOT}|Update configmaps team-a/b`,
    `${ALICE_CLAIMS}|${BOT}|Update configmaps team-a/a`,
  ]);
  assert.equal(await metric(metrics, 'reverser_attribution_joins_total', { tier: 'exact' }), 4);
  assert.equal(await metric(metrics, 'reverser_attribution_joins_total', { tier: 'unresolved' }), 0);
  await metricReaches(metrics, 'reverser_commits_total', { author_kind: 'audit' }, 3);
  const gt = await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  assert.equal(condition(gt, 'AuditAttribution')?.status, 'True');
  assert.equal(condition(gt, 'AuditAttribution')?.reason, 'FactsArriving');
  assert.match(condition(gt, 'AuditAttribution')!.message, /^audit facts on route "hosting" named 4 of this GitTarget's changes, the last fact naming one at \d{4}-/);
});

test('a change whose fact never comes is committed as unresolved after the grace; the change after it waits its turn; a late fact rewrites nothing', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-unresolved-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const metrics = new Registry();
  const GRACE = 1_500;
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: GRACE }, metrics });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await facts.put([fact({ user: 'alice', uid: 'uid-y', resourceVersion: '21', name: 'y' })]);
  const sink = h.running.sink!;
  const added = Date.now();
  await sink.add(key, [edit('x', 'uid-x', '20', { v: '1' })]);
  await sink.add(key, [edit('y', 'uid-y', '21', { v: '1' })]);
  // Both wait in the record (y's fact is there, but y may not overtake x).
  const staged = (await record(h.store))?.staging ?? [];
  assert.deepEqual(staged.map((e) => [e.change?.op === 'write' ? e.change.object.metadata.name : '', e.resolved?.authorKey ?? null]), [['x', null], ['y', 'user:alice']]);
  await new Promise((r) => setTimeout(r, GRACE / 2));
  assert.deepEqual(await remoteLog(remote.authURL('config')), [], 'nothing is committed while the head waits for its fact');
  const log = await logOf(remote.authURL('config'), 2);
  assert.ok(Date.now() - added >= GRACE);
  assert.deepEqual(log, [`${ALICE}|${BOT}|Update configmaps team-a/y`, `${UNRESOLVED}|${BOT}|Update configmaps team-a/x`]);
  // x's fact arrives after its commit was pushed: nothing is rewritten, nothing added.
  await facts.put([fact({ user: 'bob', uid: 'uid-x', resourceVersion: '20', name: 'x' })]);
  await new Promise((r) => setTimeout(r, 1_500));
  assert.deepEqual(await remoteLog(remote.authURL('config')), log);
  assert.equal(await metric(metrics, 'reverser_attribution_joins_total', { tier: 'unresolved' }), 1);
  assert.equal(await metric(metrics, 'reverser_attribution_joins_total', { tier: 'exact' }), 1);
  await metricReaches(metrics, 'reverser_commits_total', { author_kind: 'unresolved' }, 1);
  await metricReaches(metrics, 'reverser_commits_total', { author_kind: 'audit' }, 1);
});

test('a fact that arrives while its change waits names the author at once, long before the grace ends; a delete joins its delete fact', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-late-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 20_000 } });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  const sink = h.running.sink!;
  const added = Date.now();
  await sink.add(key, [edit('z', 'uid-z', '30', { v: '1' })]);
  // Acknowledged: it waits in the record for its fact (read, where a sleep let it wait before).
  assert.deepEqual(((await record(h.store))?.staging ?? []).map((e) => [e.change?.op === 'write' ? e.change.object.metadata.name : '', e.resolved?.authorKey ?? null]), [['z', null]]);
  await facts.put([fact({ user: 'bob', uid: 'uid-z', resourceVersion: '30', name: 'z' })]);
  const log = await logOf(remote.authURL('config'), 1);
  assert.ok(Date.now() - added < 10_000, `took ${Date.now() - added} ms (grace 20 s)`);
  assert.deepEqual(log, [`${BOB}|${BOT}|Update configmaps team-a/z`]);
  // The delete carries the resourceVersion of the deletion; carol's delete fact names her by uid.
  await sink.add(key, [{ op: 'delete', ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'z' }, source: { uid: 'uid-z', resourceVersion: '31', resource: 'configmaps' } }]);
  await facts.put([fact({ user: 'carol', verb: 'delete', uid: 'uid-z', resourceVersion: '', name: 'z' })]);
  const log2 = await logOf(remote.authURL('config'), 2);
  assert.deepEqual(log2[0], `carol <carol@noreply.cluster.local>|${BOT}|Delete configmaps team-a/z`);
});

test("CommitRequests under attribution: bob's request does not close alice's window; alice's does, with her message; asserting her name does not claim it", { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-creq-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 5_000 } });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await facts.put([fact({ user: 'alice', uid: 'uid-a', resourceVersion: '40', name: 'a' }), fact({ user: 'alice', uid: 'uid-b', resourceVersion: '41', name: 'b' })]);
  await h.running.sink!.add(key, [edit('a', 'uid-a', '40', { v: '1' }), edit('b', 'uid-b', '41', { v: '1' })]);
  const get = (name: string) => h.store.get(CR, { cluster: '_', namespace: 'team-a', name });

  await createCommitRequest(h.store, 'bob-save', 'tenants', { message: 'Bob: save', closeDelaySeconds: 1 }, { username: 'bob' });
  // bob, asserting alice's name (as if granted assert-author), is still bob: no claim on her window either.
  await createCommitRequest(h.store, 'bob-as-alice', 'tenants', { message: 'Bob for Alice', closeDelaySeconds: 1, author: { name: 'Alice Doe', email: 'alice@example.com' } }, { username: 'bob' });
  for (const name of ['bob-save', 'bob-as-alice']) {
    const cr = await waitFor(`${name} finished`, async () => {
      const o = await get(name);
      return readyOf(o)?.reason === 'NothingToCommit' ? o : undefined;
    }, 15_000);
    assert.equal(readyOf(cr)?.message, 'no pending change was collected for this request within its close delay; nothing to commit');
  }
  assert.deepEqual(await remoteLog(remote.authURL('config')), [], "alice's window is still open");
  assert.equal((await record(h.store))?.windows[0]?.changes.length, 2);

  await createCommitRequest(h.store, 'alice-save', 'tenants', { message: 'Alice: both limits' }, { username: 'alice', extra: ALICE_EXTRA });
  const done = await waitFor('alice-save Committed', async () => {
    const o = await get('alice-save');
    return readyOf(o)?.reason === 'Committed' ? o : undefined;
  }, 15_000);
  const log = await logOf(remote.authURL('config'), 1);
  assert.deepEqual(log, [`${ALICE_CLAIMS}|${BOT}|Alice: both limits`]);
  assert.equal((done.status as { sha: string }).sha.length, 40);
});

test("a request created while its submitter's changes still wait for their facts waits with them, then commits all of them with its message", { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-creq-early-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 20_000 } });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await h.running.sink!.add(key, [edit('a', 'uid-a', '70', { v: '1' })]);
  await h.running.sink!.add(key, [edit('b', 'uid-b', '71', { v: '1' })]);
  // closeDelaySeconds 0: its deadline passes at once, but alice's changes staged before it may be hers.
  await createCommitRequest(h.store, 'alice-save', 'tenants', { message: 'Alice: a and b' }, { username: 'alice' });
  await new Promise((r) => setTimeout(r, 1_000));
  const pending = await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'alice-save' });
  assert.equal(readyOf(pending)?.reason, 'Pending');
  await facts.put([fact({ user: 'alice', uid: 'uid-a', resourceVersion: '70', name: 'a' }), fact({ user: 'alice', uid: 'uid-b', resourceVersion: '71', name: 'b' })]);
  await waitFor('alice-save Committed', async () => readyOf(await h.store.get(CR, { cluster: '_', namespace: 'team-a', name: 'alice-save' }))?.reason === 'Committed', 15_000);
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`${ALICE}|${BOT}|Alice: a and b`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
});

test('restart between edit and commit (Redis): the author of a window and of a staged change survive; the commit names them', { timeout: 90_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const dir = tempDir(t, 'join-restart-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts(); // facts are shared by replicas and restarts (the Store-backed facts keep them)
  const store1 = await createStore({ storage: 'redis', redisUrl: redis.url });
  const h1 = await startHarness(t, { dataDir: dir, store: store1, controllers: 'none' });
  await createGitSecret(store1, remote);
  const { obj, key } = await createGitTarget(store1, 'tenants', remote.url('config'), { idleSeconds: 1 });
  // The sink of a replica that dies before any windows controller ran.
  const sink = new StoreWindowSink(new WindowRecords(store1), () => obj, undefined, Date.now, { facts, auditListener: true, graceMs: 60_000 });
  await facts.put([fact({ user: 'alice', uid: 'uid-a', resourceVersion: '50', name: 'a' })]);
  await sink.add(key, [edit('a', 'uid-a', '50', { v: '1' })]);
  await sink.add(key, [edit('b', 'uid-b', '51', { v: '1' })]);
  const before = await record(store1);
  assert.equal(before?.windows[0]?.authorKey, 'user:alice');
  assert.equal(before?.staging?.length, 1);
  await h1.stop();
  await facts.put([fact({ user: 'bob', uid: 'uid-b', resourceVersion: '51', name: 'b' })]);

  const store2 = await createStore({ storage: 'redis', redisUrl: redis.url });
  await startHarness(t, { dataDir: dir, store: store2, attribution: { facts, auditListener: true, graceMs: 60_000 } });
  const log = await logOf(remote.authURL('config'), 2);
  assert.deepEqual(log, [`${BOB}|${BOT}|Update configmaps team-a/b`, `${ALICE}|${BOT}|Update configmaps team-a/a`]);
});

test('AuditAttribution: Unknown before any fact, False after the no-facts grace while edits were mirrored, True once facts arrive; absent without a route', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'join-condition-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 300, noFactsGraceMs: 4_000 } });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  const gtOf = (name: string) => h.store.get(GT, { cluster: '_', namespace: 'team-a', name });
  const cond = async (name: string) => condition(await gtOf(name), 'AuditAttribution');
  const unknown = await waitFor('Unknown', async () => ((await cond('tenants'))?.status === 'Unknown' ? cond('tenants') : undefined));
  assert.deepEqual(unknown, { ...unknown, reason: 'NoFactsYet', message: 'no audit fact on route "hosting" has named a change of this GitTarget yet' });

  const edited = Date.now();
  await h.running.sink!.add(key, [edit('a', 'uid-a', '60', { v: '1' })]);
  assert.equal((await cond('tenants'))?.status, 'Unknown', 'within the no-facts grace');
  assert.deepEqual(await logOf(remote.authURL('config'), 1), [`${UNRESOLVED}|${BOT}|Update configmaps team-a/a`]);
  const f = await waitFor('False', async () => ((await cond('tenants'))?.status === 'False' ? cond('tenants') : undefined), 15_000);
  assert.ok(Date.now() - edited >= 4_000);
  assert.equal(f?.reason, 'NoFactsReceived');
  assert.match(f!.message, /^edits were mirrored since \S+ but no audit fact on route "hosting" named them within 4s \(no fact has named one yet\); their commits are authored "unknown \(attribution unresolved\)"/);

  // Another tenant's fact on the same route says nothing about this GitTarget: the condition
  // neither turns True nor shows its count or time (bounded wait: the drain polls every 500 ms).
  await facts.put([fact({ user: 'mallory', uid: 'uid-other', resourceVersion: '61', name: 'other', namespace: 'team-z', time: '2031-01-01T00:00:00Z' })]);
  await new Promise((r) => setTimeout(r, 2_000));
  const still = await cond('tenants');
  assert.equal(still?.status, 'False');
  assert.doesNotMatch(still!.message, /2031|mallory|team-z/);
  // A fact naming its own next change turns it True, with its own count and time only.
  await facts.put([fact({ user: 'alice', uid: 'uid-b', resourceVersion: '62', name: 'b', time: '2030-01-01T00:00:00Z' })]);
  await h.running.sink!.add(key, [edit('b', 'uid-b', '62', { v: '1' })]);
  const tr = await waitFor('True', async () => ((await cond('tenants'))?.status === 'True' ? cond('tenants') : undefined), 10_000);
  assert.deepEqual({ reason: tr?.reason, message: tr?.message }, {
    reason: 'FactsArriving',
    message: 'audit facts on route "hosting" named 1 of this GitTarget\'s changes, the last fact naming one at 2030-01-01T00:00:00Z',
  });

  // As the registry stores GitTargets (with the schema's defaults): the controllers' status writes go through it.
  const DEFAULTS = { commit: { idleSeconds: 0, maxAgeSeconds: 600, mode: 'Auto' }, prune: { mode: 'OnEvent' }, includeClusterNoise: false, suspend: false };
  // A kubeconfig-Secret source without spec.attribution.auditRoute: no route, no condition, unattributed windows.
  await h.store.create(GT, { cluster: '_', namespace: 'team-a', name: 'remote-src' }, {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'remote-src', namespace: 'team-a', uid: 'uid-remote-src', generation: 1 },
    spec: { repository: { url: remote.url('config') }, branch: 'other', path: 'x', source: { kubeConfig: { secretRef: { name: 'kc' } } }, ...DEFAULTS },
  });
  // ... and one naming its route: facts of that route only.
  await h.store.create(GT, { cluster: '_', namespace: 'team-a', name: 'routed' }, {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'routed', namespace: 'team-a', uid: 'uid-routed', generation: 1 },
    spec: { repository: { url: remote.url('config') }, branch: 'other', path: 'y', source: { kubeConfig: { secretRef: { name: 'kc' } } }, attribution: { auditRoute: 'tenant-b' }, ...DEFAULTS },
  });
  await waitFor('routed Unknown', async () => (await cond('routed'))?.reason === 'NoFactsYet');
  await facts.put([fact({ route: 'tenant-b', user: 'dave', uid: 'uid-q', resourceVersion: '1', name: 'q' })]);
  // A fact on its route about an object it never mirrored is not this GitTarget's: it stays NoFactsYet.
  await new Promise((r) => setTimeout(r, 1_500));
  assert.deepEqual({ reason: (await cond('routed'))?.reason, message: (await cond('routed'))?.message }, { reason: 'NoFactsYet', message: 'no audit fact on route "tenant-b" has named a change of this GitTarget yet' });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await cond('remote-src'), undefined);
});
