// A failing remote from the windows controller's side (controllers/windows/backoff.ts,
// runtime/queue.ts): failures a retry cannot fix cost the remote a handful of requests, not
// hundreds a second; the first failed attempt shows on the GitTarget at once, with the real
// pendingChanges kept current (coalesced) while changes keep coming; one log line per state
// change; deleting the GitTarget stops its transfer. Real store, real git http-backend behind a
// hostile remote on loopback (test/support/hostile-remote.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/storage/index.js';
import { startHostileRemote, type HostileMode, type HostileRemote } from '../support/hostile-remote.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { GT, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor, type Harness } from './harness.js';
import type { TargetKey } from '../../src/controllers/windows/types.js';
import { waitMs } from '../support/deadline.js';

const BOT = 'Reverser Bot <bot@reverser.example>';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
}

async function target(h: Harness, name: string): Promise<KubeObject> {
  return (await h.store.get(GT, { cluster: '_', namespace: 'team-a', name }))!;
}

function cond(o: KubeObject | undefined, type: string): Pick<Cond, 'status' | 'reason' | 'message'> | undefined {
  const c = ((o?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((x) => x.type === type);
  return c && { status: c.status, reason: c.reason, message: c.message };
}

async function hostile(t: TestContext, upstreamPort: number, mode: HostileMode): Promise<HostileRemote> {
  const r = await startHostileRemote(upstreamPort, mode);
  t.after(() => r.close());
  return r;
}

test('401, 404 and a web page: a handful of requests in 20 s, the reason on RepositoryReady and Ready, pendingChanges follows edits, one log line each', { timeout: 90_000 }, async (t) => {
  const upstream = await gitServer(t);
  const lines: string[] = [];
  const h = await startHarness(t, { dataDir: tempDir(t, 'backoff-permanent-'), logLines: (l) => lines.push(l) });
  await createGitSecret(h.store, upstream);
  const cases: Array<{ name: string; mode: HostileMode; reason: string; message: (where: string) => string }> = [
    { name: 'auth', mode: 'status401', reason: 'AuthFailed', message: (w) => `authentication to ${w} failed (HTTP 401); check the credentials Secret` },
    { name: 'missing', mode: 'status404', reason: 'NotFound', message: (w) => `repository ${w} not found (HTTP 404)` },
    { name: 'website', mode: 'plain200', reason: 'NotFound', message: (w) => `${w} is not a Git smart-HTTP repository (no receive-pack advertisement)` },
  ];
  const started = await Promise.all(
    cases.map(async (c) => {
      const remote = await hostile(t, upstream.port, c.mode);
      const { key } = await createGitTarget(h.store, c.name, remote.url('config'), { idleSeconds: 0 });
      await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
      return { ...c, remote, key, where: `http://127.0.0.1:${remote.port}/config.git` };
    }),
  );
  for (const c of started) {
    const o = await waitFor(`${c.name}: RepositoryReady False`, async () => {
      const x = await target(h, c.name);
      return cond(x, 'RepositoryReady')?.status === 'False' ? x : undefined;
    });
    assert.deepEqual(cond(o, 'RepositoryReady'), { status: 'False', reason: c.reason, message: c.message(c.where) }, c.name);
    // Ready follows in the same write (the harness's GitTarget reports no other input yet).
    assert.equal(cond(o, 'Ready')?.status, 'False', c.name);
    assert.equal((o.status as { pendingChanges?: number }).pendingChanges, 1, `${c.name}: pendingChanges`);
  }
  // Edits keep coming while the backoff holds (next retry ≥ 9 s away): pendingChanges follows
  // them within about a second, in a few coalesced writes, and the remote hears nothing of them.
  const auth = started[0]!;
  const requestsBefore = auth.remote.requestCount();
  const stormStart = Date.now();
  for (let i = 0; i < 100; i++) await h.running.sink!.add(auth.key, [configMap(`storm-${i}`, { v: String(i) })]);
  const stormMs = Date.now() - stormStart;
  await waitFor('auth: pendingChanges 101', async () => (((await target(h, 'auth')).status as { pendingChanges?: number }).pendingChanges === 101 ? true : undefined), 3_000, 20);
  t.diagnostic(`auth: 100 edits in ${stormMs} ms while failing; pendingChanges 101 after ${Date.now() - stormStart} ms`);
  assert.equal(auth.remote.requestCount(), requestsBefore, 'edits during the backoff reached the remote');

  // Watch for 20 s from the first request each remote saw.
  const first = Math.min(...started.map((c) => c.remote.requests[0]!.at));
  await sleep(Math.max(0, first + 20_000 - Date.now()));
  const counts = Object.fromEntries(started.map((c) => [c.name, c.remote.requests.filter((r) => r.at <= first + 20_000).length]));
  t.diagnostic(`requests in 20 s: ${JSON.stringify(counts)}`);
  for (const c of started) {
    // First attempt at once, then 10 s (±10 %) later; the next one is due only after 30 s.
    assert.ok(counts[c.name]! >= 1 && counts[c.name]! <= 3, `${c.name}: ${counts[c.name]} requests in 20 s`);
    const failed = lines.filter((l) => l.includes('reconcile failed') && l.includes(`"key":"_/team-a/${c.name}"`));
    assert.equal(failed.length, 1, `${c.name}: log lines ${JSON.stringify(failed)}`);
    assert.equal(JSON.parse(failed[0]!).reason, c.reason);
  }
  t.diagnostic(`log lines in total: ${lines.length}`);
  assert.ok(lines.length <= 10, `log lines: ${lines.length}\n${lines.join('')}`);
});

test('a transient failure shows at once; pendingChanges is the real count, coalesced; the remote back, everything lands', { timeout: 120_000 }, async (t) => {
  const upstream = await gitServer(t);
  const lines: string[] = [];
  const h = await startHarness(t, { dataDir: tempDir(t, 'backoff-transient-'), logLines: (l) => lines.push(l) });
  await createGitSecret(h.store, upstream);
  const remote = await hostile(t, upstream.port, 'status503');
  const where = `http://127.0.0.1:${remote.port}/config.git`;
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  const sink = h.running.sink!;
  await sink.add(key, [configMap('a', { v: '1' }), configMap('b', { v: '1' }), configMap('c', { v: '1' })]);
  // The window closes after idleSeconds (1 s); its first attempt fails and says so.
  const addedAt = Date.now();
  const failed = await waitFor('RepositoryReady False', async () => {
    const x = await target(h, 'tenants');
    return cond(x, 'RepositoryReady')?.status === 'False' ? x : undefined;
  });
  const visibleAfter = Date.now() - addedAt;
  t.diagnostic(`RepositoryReady False ${visibleAfter} ms after the changes (idleSeconds 1)`);
  assert.ok(visibleAfter < waitMs(5_000), `took ${visibleAfter} ms`);
  assert.deepEqual(cond(failed, 'RepositoryReady'), { status: 'False', reason: 'Unreachable', message: `${where} answered HTTP 503` });
  assert.equal((failed.status as { pendingChanges?: number }).pendingChanges, 3);
  assert.equal(remote.requestCount(), 1);

  // An edit storm while failing: 200 changes, one record write each. status.pendingChanges
  // follows within a second or so, with a handful of status writes, not 200.
  let statusWrites = 0;
  let last = failed.metadata.resourceVersion;
  const poll = setInterval(() => {
    void target(h, 'tenants').then((o) => {
      if (o.metadata.resourceVersion !== last) {
        last = o.metadata.resourceVersion;
        statusWrites++;
      }
    });
  }, 5);
  t.after(() => clearInterval(poll));
  const stormStart = Date.now();
  for (let i = 0; i < 200; i++) await sink.add(key as TargetKey, [configMap(`storm-${i}`, { v: String(i) })]);
  const stormMs = Date.now() - stormStart;
  await waitFor('pendingChanges 203', async () => (((await target(h, 'tenants')).status as { pendingChanges?: number }).pendingChanges === 203 ? true : undefined), 10_000);
  await sleep(1_200);
  clearInterval(poll);
  t.diagnostic(`storm of 200 changes took ${stormMs} ms; GitTarget writes meanwhile: ${statusWrites}`);
  // At most one pendingChanges write per second (plus the backoff's retry outcome, unchanged so unwritten).
  assert.ok(statusWrites >= 1 && statusWrites <= Math.ceil(stormMs / 1000) + 3, `status writes: ${statusWrites} during ${stormMs} ms`);

  // Backoff holds: the storm's record writes did not make the controller retry the remote.
  const during = remote.requests.filter((r) => r.at >= stormStart && r.at <= stormStart + stormMs).length;
  assert.ok(during <= Math.ceil(stormMs / 1000) + 1, `${during} requests during the ${stormMs} ms storm`);

  // The remote comes back: the pending windows land at the next retry (transient backoff ≤ 30 s).
  remote.mode = 'pass';
  const ok = await waitFor(
    'RepositoryReady True and nothing pending',
    async () => {
      const x = await target(h, 'tenants');
      return cond(x, 'RepositoryReady')?.status === 'True' && (x.status as { pendingChanges?: number }).pendingChanges === 0 ? x : undefined;
    },
    45_000,
  );
  assert.deepEqual(cond(ok, 'RepositoryReady'), { status: 'True', reason: 'Pushed', message: 'the last commit was pushed' });
  const c = await cloneAndCheck(upstream.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`${BOT}|${BOT}|Update 200 objects in team-a/tenants`, `${BOT}|${BOT}|Update 3 objects in team-a/tenants`]);
  assert.equal(c.files.length, 203);
  const states = lines.filter((l) => l.includes('"key":"_/team-a/tenants"') && /reconcile (failed|succeeded)/.test(l)).map((l) => JSON.parse(l).msg);
  assert.deepEqual(states, ['windows: reconcile failed, retrying', 'windows: reconcile succeeded again']);
});

test('deleting a GitTarget stops its transfer at once', { timeout: 60_000 }, async (t) => {
  const upstream = await gitServer(t);
  // No size cap to speak of: only the deletion can stop this transfer.
  const h = await startHarness(t, { dataDir: tempDir(t, 'backoff-delete-'), engine: { remoteLimits: { maxResponseBytes: 64 * 1024 * 1024 * 1024 } } });
  await createGitSecret(h.store, upstream);
  const remote = await hostile(t, upstream.port, 'endless');
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await h.running.sink!.add(key, [configMap('a', { v: '1' })]);
  await waitFor('16 MiB streamed', () => remote.bytesStreamed() > 16 * 1024 * 1024 || undefined, 20_000, 10);
  const deletedAt = Date.now();
  await h.store.delete(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  await waitFor('the remote to see its connection closed', () => remote.openRequests() === 0 || undefined, 5_000, 10);
  const stoppedAfter = Date.now() - deletedAt;
  const bytes = remote.bytesStreamed();
  await sleep(500);
  assert.equal(remote.bytesStreamed(), bytes, 'bytes kept flowing after the deletion');
  t.diagnostic(`transfer stopped ${stoppedAfter} ms after the deletion, at ${(bytes / 1048576).toFixed(0)} MiB`);
  assert.ok(stoppedAfter < waitMs(2_000), `stopped after ${stoppedAfter} ms`);
  // Its pending changes are dropped with it, and the remote hears nothing more.
  const { WINDOWS_RESOURCE } = await import('../../src/controllers/windows/record.js');
  await waitFor('the window record removed', async () => ((await h.store.list(WINDOWS_RESOURCE, { cluster: '_' })).items.length === 0 ? true : undefined), 10_000);
  const n = remote.requestCount();
  await sleep(1_500);
  assert.equal(remote.requestCount(), n);
});
