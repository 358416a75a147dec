// Shared by shards-sentinel-failover.test.ts and shards-cluster-failover.test.ts: three server
// replicas on a replicated Redis share the GitTargets (src/controllers/runtime/leases.ts,
// shards.ts) while the sandbox's ConfigMaps are created one after another, and the Redis primary
// that holds the store's keys is SIGKILLed mid-stream (optionally a server replica with it). The
// same replica processes (no restart) must carry on: every edit the source acknowledged is in its
// repository exactly once (one commit adds the file, none touches it again, no commit is empty),
// the leases end up held once each, and nothing is committed afterwards.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { until } from '../support/deadline.js';
import type { StartedServer } from '../support/server.js';
import { commits, git, ok } from './harness.js';
import { IDLE, assertEven, createLive, leasesHeld, replicaMetrics, seedSuspended, settled, startFleet, type Fleet } from './shards-support.js';

export const SUSPENDED = 3000;
export const LIVE = 4;
const TOTAL = SUSPENDED + LIVE;

export interface FailoverPlan {
  /** The `--redis-url` every replica uses. */
  redisUrl: string;
  /** Where the suspended GitTargets are written before the test (default redisUrl): without waitReplicas, the seeding is not under test. */
  seedUrl?: string;
  /** SIGKILLs the primary that holds the store's keys; resolves once the process is gone. */
  killPrimary(): Promise<void>;
  /** True once a replica of the killed primary serves as primary. */
  promoted(): Promise<boolean>;
  /** Also SIGKILL the server replica holding the most live GitTargets, at the same moment. */
  killServerReplica?: boolean;
}

export interface FailoverReport {
  edits: number;
  editsBeforeKill: number;
  promotedMs: number;
  /** From the kill until every acknowledged edit was in git. */
  allCommittedMs: number;
  /** From the last acknowledged edit until every acknowledged edit was in git. */
  lastEditCommittedMs: number;
  /** The most leases the replicas reported holding at once, sampled every 250 ms. */
  maxLeasesSeen: number;
  shares: number[];
}

const cmYAML = (ns: string, name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${ns}\ndata:\n  seq: "${value}"\n`;

/** Edit k: ConfigMap e-<k> created in namespace team-<k mod LIVE>, so each edit is one new file in one repository. */
const editOf = (k: number) => ({ ns: `team-${k % LIVE}`, name: `e-${k}` });

export async function replicasThroughFailover(t: TestContext, plan: FailoverPlan): Promise<FailoverReport> {
  const fleet: Fleet = await startFleet(t, plan.redisUrl, 3);
  await seedSuspended(plan.seedUrl ?? plan.redisUrl, SUSPENDED);
  const bares = await createLive(fleet, LIVE);
  const three = await settled(fleet.replicas, TOTAL, 60_000);
  assertEven(three.map((m) => m.owned), TOTAL);
  await until(async () => (await leasesHeld(fleet.replicas)) === LIVE, 'one lease per live GitTarget', 30_000, 250);
  const pids = fleet.replicas.map((r) => r.pid);

  let victim: StartedServer | undefined;
  if (plan.killServerReplica) {
    const held = await Promise.all(fleet.replicas.map(async (r) => (await replicaMetrics(r)).held));
    victim = fleet.replicas[held.indexOf(Math.max(...held))]!;
  }
  const survivors = fleet.replicas.filter((r) => r !== victim);

  // Leases as the replicas see them, sampled throughout: a lease held twice shows as more than LIVE
  // for as long as two replicas believe they hold it (the fencing token still guards each write).
  let maxLeasesSeen = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const held = await Promise.all(survivors.map((r) => replicaMetrics(r).then((m) => m.held, () => 0)));
      maxLeasesSeen = Math.max(maxLeasesSeen, held.reduce((a, b) => a + b, 0));
      await new Promise((r) => setTimeout(r, 250));
    }
  })();

  // Two writers create ConfigMaps in the source, one at a time each, through kubectl; each
  // acknowledged edit is counted. The sandbox (the source) is not on Redis: it never fails here.
  const acked: number[] = [];
  let next = 0;
  let stop = false;
  let killed = false;
  let afterPromotion = 0;
  let isPromoted = false;
  const writer = async (): Promise<void> => {
    while (!stop) {
      const k = next++;
      const { ns, name } = editOf(k);
      await ok(fleet.sandbox.kubectl, ['create', 'configmap', name, '-n', ns, `--from-literal=seq=${k}`]);
      acked.push(k);
      if (isPromoted) afterPromotion++;
    }
  };
  const writers = [writer(), writer()];
  try {
    await until(() => acked.length >= 30, '30 edits before the kill', 60_000, 50);
    const editsBeforeKill = acked.length;
    const killedAt = Date.now();
    await Promise.all([plan.killPrimary(), victim?.kill()]);
    killed = true;
    await until(() => plan.promoted().catch(() => false), 'a replica of the killed primary to be promoted', 30_000, 100);
    const promotedMs = Date.now() - killedAt;
    isPromoted = true;
    await until(() => afterPromotion >= 30, '30 edits after the promotion', 60_000, 50);
    stop = true;
    await Promise.all(writers);
    const lastEditAt = Date.now();
    t.diagnostic(`${acked.length} edits acknowledged by the source, ${editsBeforeKill} before the kill; promoted after ${promotedMs} ms`);

    // Every acknowledged edit in git.
    const expected = bares.map((_, i) => acked.filter((k) => editOf(k).ns === `team-${i}`).sort((a, b) => a - b));
    const present = async (i: number): Promise<number> => {
      const out = await git(bares[i]!, 'ls-tree', '-r', '--name-only', 'main', `live/team-${i}/configmaps/`).catch(() => '');
      return out.split('\n').filter((f) => /\/e-\d+\.yaml$/.test(f)).length;
    };
    let counts: number[] = [];
    await until(async () => {
      counts = await Promise.all(bares.map((_, i) => present(i)));
      return counts.every((c, i) => c >= expected[i]!.length);
    }, 'every acknowledged edit in git', 120_000, 500).catch((e) => {
      throw new Error(`${(e as Error).message}: files ${counts.join(', ')} of ${expected.map((x) => x.length).join(', ')}`);
    });
    const allCommittedMs = Date.now() - killedAt;
    const lastEditCommittedMs = Date.now() - lastEditAt;
    // Then one more idle window and a margin: a late duplicate commit would land now.
    await new Promise((r) => setTimeout(r, (IDLE + 4) * 1000));
    sampling = false;
    await sampler;

    for (const [i, bare] of bares.entries()) {
      const names = (await git(bare, 'ls-tree', '-r', '--name-only', 'main', `live/team-${i}/configmaps/`)).split('\n').filter(Boolean);
      assert.deepEqual(names.sort(), [...expected[i]!.map((k) => `live/team-${i}/configmaps/e-${k}.yaml`), `live/team-${i}/configmaps/cm.yaml`].sort(), `live-${i}: exactly the acknowledged edits`);
      for (const k of expected[i]!) {
        const path = `live/team-${i}/configmaps/e-${k}.yaml`;
        assert.equal(await git(bare, 'show', `main:${path}`), cmYAML(`team-${i}`, `e-${k}`, String(k)), path);
        const touched = (await git(bare, 'log', '--format=%H', 'main', '--', path)).split('\n').filter(Boolean);
        assert.equal(touched.length, 1, `${path} is added by exactly one commit and never rewritten (${touched.join(', ')})`);
      }
      // No commit without a change: a window committed twice would be an empty or repeated commit.
      const shas = (await git(bare, 'log', '--format=%H', 'main')).split('\n').filter(Boolean);
      for (const sha of shas) {
        const changed = (await git(bare, 'diff-tree', '--root', '--no-commit-id', '--name-only', '-r', sha)).trim();
        assert.notEqual(changed, '', `live-${i}: commit ${sha} changes something (${(await commits(bare)).join(' | ')})`);
      }
    }

    // The same processes, recovered: none exited, each answers /readyz, they agree on the members
    // and hold every live GitTarget's lease once.
    for (const r of survivors) {
      assert.ok(r.alive(), `replica ${r.pid} never exited`);
      assert.ok(pids.includes(r.pid));
      await until(async () => (await r.get('/readyz')).status === 200, `replica ${r.pid} /readyz 200`, 30_000, 250);
    }
    const after = await settled(survivors, TOTAL, 60_000);
    assertEven(after.map((m) => m.owned), TOTAL);
    await until(async () => (await leasesHeld(survivors)) === LIVE, 'one lease per live GitTarget after the failover', 30_000, 250);
    return { edits: acked.length, editsBeforeKill, promotedMs, allCommittedMs, lastEditCommittedMs, maxLeasesSeen, shares: after.map((m) => m.owned) };
  } catch (e) {
    // What the replicas said, for whoever reads a failure: their warnings and handovers.
    for (const r of fleet.replicas) {
      const lines = r.stderr().split('\n').filter((l) => /"level":"(warn|error)"|lease|replicas changed|snapshot/.test(l));
      t.diagnostic(`replica ${r.pid}:\n${lines.slice(-40).join('\n')}`);
    }
    throw e;
  } finally {
    stop = true;
    sampling = false;
    await Promise.allSettled([...writers, sampler]);
    if (!killed) t.diagnostic('the primary was never killed');
  }
}
