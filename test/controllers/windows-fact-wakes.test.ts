// A fact wakes only the GitTargets with changes waiting for their author (the windows controller's
// `staged` set, src/controllers/windows/controller.ts). Every GitTarget mirroring the sandbox or the
// hosting cluster shares one fact route, so waking all of them on every fact cost one reconcile per
// GitTarget per edit (1,000 per sandbox write at 1,000 tenants). Counted with
// reverser_controller_reconciles_total{controller="windows"}, against a real Store, the real windows
// controller and a real `git http-backend` remote; the fact source is the in-memory one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { COMMITTER, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';
import { MemoryFacts, fact } from '../support/memory-facts.js';
import { WINDOWS_RESOURCE, type WindowRecord } from '../../src/controllers/windows/record.js';
import type { PendingChange } from '../../src/controllers/windows/types.js';

const IDLE_TARGETS = 40;
const UNRELATED_FACTS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function reconciles(reg: Registry): Promise<number> {
  const m = (await reg.getMetricsAsJSON()).find((x) => x.name === 'reverser_controller_reconciles_total');
  return (m?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((v) => v.labels.controller === 'windows')?.value ?? 0;
}

/** Resolves once the counter has not moved for `quietMs` (every start-up reconcile done). */
async function settled(reg: Registry, quietMs: number): Promise<number> {
  let last = await reconciles(reg);
  let since = Date.now();
  return waitFor('the windows controller to settle', async () => {
    const now = await reconciles(reg);
    if (now !== last) {
      last = now;
      since = Date.now();
      return undefined;
    }
    return Date.now() - since >= quietMs ? now : undefined;
  }, 20_000, 25);
}

function edit(name: string, uid: string, resourceVersion: string): PendingChange {
  return { op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { v: '1' } }, source: { uid, resourceVersion, resource: 'configmaps' } };
}

test('facts on a shared route wake only the GitTarget whose change waits for its author, not the other 40 on that route', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'fact-wakes-');
  const remote = await gitServer(t);
  const facts = new MemoryFacts();
  const metrics = new Registry();
  // A long grace: the staged change can only leave on its fact.
  const h = await startHarness(t, { dataDir: dir, attribution: { facts, auditListener: true, graceMs: 30_000 }, metrics, controllers: 'windows' });
  await createGitSecret(h.store, remote);
  // Every GitTarget of the namespace reads the hosting route; only `waiting` will have a change staged.
  for (let i = 0; i < IDLE_TARGETS; i++) await createGitTarget(h.store, `idle-${String(i).padStart(2, '0')}`, remote.url('config'), { idleSeconds: 0 });
  const { key } = await createGitTarget(h.store, 'waiting', remote.url('config'), { idleSeconds: 0 });
  const atRest = await settled(metrics, 300);

  await h.running.sink!.add(key, [edit('x', 'uid-x', '20')]);
  const rec = async () => (await h.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'waiting' })) as WindowRecord | undefined;
  assert.deepEqual((await rec())?.staging?.map((e) => e.change?.op === 'write' && e.change.object.metadata.name), ['x']);
  // Its record's event reconciles it once the windows cache holds the staged change.
  await waitFor('the staged change to reach the windows cache', async () => (await reconciles(metrics)) > atRest, 5_000);

  // Facts naming other objects on the same route: each wakes `waiting` (which finds nothing for
  // it), never the idle ones. Spaced so that wakes are not merged by the queue.
  const before = await reconciles(metrics);
  const t0 = Date.now();
  for (let i = 0; i < UNRELATED_FACTS; i++) {
    await facts.put([fact({ user: 'bob', uid: `uid-other-${i}`, resourceVersion: String(100 + i), name: `other-${i}` })]);
    await sleep(30);
  }
  await sleep(200);
  const woken = (await reconciles(metrics)) - before;
  const elapsed = Date.now() - t0;
  // `waiting` also looks again every 500 ms for facts posted to other replicas (STAGING_POLL_MS).
  const polls = Math.ceil(elapsed / 500) + 1;
  // Waking every GitTarget on the route would be ≥ 41 per fact.
  assert.ok(woken >= 1 && woken <= UNRELATED_FACTS + polls, `${woken} windows reconciles for ${UNRELATED_FACTS} unrelated facts over ${elapsed} ms (allowed 1..${UNRELATED_FACTS + polls})`);
  assert.deepEqual((await rec())?.staging?.map((e) => e.change?.op === 'write' && e.change.object.metadata.name), ['x'], 'still waiting for its own fact');

  // Its own fact moves it: committed as alice's edit.
  await facts.put([fact({ user: 'alice', uid: 'uid-x', resourceVersion: '20', name: 'x' })]);
  const log = await waitFor('the commit', async () => {
    const out = await git('/', 'ls-remote', remote.authURL('config'), 'refs/heads/main').catch(() => '');
    if (!out.trim()) return undefined;
    const c = await cloneAndCheck(remote.authURL('config'), 'main');
    c.cleanup();
    return c.log.length ? c.log : undefined;
  }, 20_000, 150);
  assert.deepEqual(log, [`alice <alice@noreply.cluster.local>|${COMMITTER.name} <${COMMITTER.email}>|Update configmaps team-a/x`]);
});
