// Replicas sharing GitTargets (src/controllers/runtime/leases.ts, shards.ts), as real server
// processes on one Redis: what each replica's /metrics says it owns and holds, GitTargets created
// in bulk, and live GitTargets on a real git http-backend whose commits the git CLI counts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { randomUUID } from 'node:crypto';
import { ns, pool, startServer, type StartedServer } from '../support/server.js';
import { createStore } from '../../src/storage/index.js';
import { StorageError } from '../../src/storage/types.js';
import { GT } from '../controllers/harness.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { commits, ok, startSandbox, type Sandbox } from './harness.js';

/**
 * The default TTL, a shorter interval (docs/configuration.md, replicas). A 4 s TTL was tried: on
 * the shared test machine (load average ~30 on 2 cores) a replica's event loop stalled past it,
 * its membership lapsed, and its share moved away and back.
 */
export const TTL_MS = 10_000;
export const HEARTBEAT_MS = 2_000;
export const IDLE = 1;

export interface ReplicaMetrics {
  owned: number;
  live: number;
  held: number;
  handoversIn: number;
  handoversOut: number;
}

export async function replicaMetrics(s: StartedServer): Promise<ReplicaMetrics> {
  const r = await s.get('/metrics');
  assert.equal(r.status, 200, r.text);
  const value = (re: RegExp) => {
    const m = re.exec(r.text);
    assert.ok(m, `metric ${re} in /metrics`);
    return Number(m[1]);
  };
  return {
    owned: value(/^reverser_gittargets_owned (\d+)$/m),
    live: value(/^reverser_replicas_live (\d+)$/m),
    held: value(/^reverser_gittarget_leases_held (\d+)$/m),
    handoversIn: value(/^reverser_gittarget_handovers_total\{direction="in"\} (\d+)$/m),
    handoversOut: value(/^reverser_gittarget_handovers_total\{direction="out"\} (\d+)$/m),
  };
}

export interface Fleet {
  sandbox: Sandbox;
  remote: GitServer;
  replicas: StartedServer[];
  /** Starts one more replica on the same Redis. */
  add(): Promise<StartedServer>;
}

/** A standalone sandbox as the source, an anonymous git server, and `n` replicas on `redisUrl`. */
export async function startFleet(t: TestContext, redisUrl: string, n: number): Promise<Fleet> {
  const sandbox = await startSandbox();
  t.after(() => sandbox.destroy());
  const remote = await startGitServer({ anonymous: true });
  t.after(() => remote.close());
  const certDir = mkdtempSync(join(tmpdir(), 'shards-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  const args = [
    '--storage=redis', `--redis-url=${redisUrl}`, `--cert-dir=${certDir}`, '--log-level=info', '--controllers=all',
    '--kubeconfig', sandbox.kubeconfig, '--authentication-tolerate-lookup-failure=true',
    '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0', '--max-streams-per-namespace=0',
    `--replica-lease-ttl=${TTL_MS}ms`, `--replica-heartbeat-interval=${HEARTBEAT_MS}ms`,
  ];
  const replicas: StartedServer[] = [];
  const add = async () => {
    const s = await startServer(args);
    t.after(() => s.stop());
    replicas.push(s);
    return s;
  };
  for (let i = 0; i < n; i++) await add();
  return { sandbox, remote, replicas, add };
}

/**
 * A create that a loaded machine may time out (the store answers Unavailable after its 3 s command
 * timeout): tried again, and an AlreadyExists after such a timeout means the first try was applied.
 */
async function created(create: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await create();
      return;
    } catch (e) {
      if (attempt > 0 && e instanceof StorageError && e.code === 'AlreadyExists') return;
      if (attempt >= 4 || !(e instanceof StorageError && e.code === 'Unavailable')) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * `count` suspended GitTargets in namespace `bulk`, written into the store the replicas share (as
 * test/controllers/harness.ts createGitTarget does): each on its own repository, with the schema's
 * defaults and the Ready=False/Suspended status the mirror would write. Through the API this took
 * minutes on the shared test machine; what is tested here is who owns them, not how they are created.
 */
export async function seedSuspended(redisUrl: string, count: number): Promise<void> {
  const store = await createStore({ storage: 'redis', redisUrl });
  try {
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    await pool(Array.from({ length: count }, (_, i) => i), 32, async (i) => {
      const name = `s-${i}`;
      await created(() => store.create(GT, { cluster: '_', namespace: 'bulk', name }, {
        apiVersion: 'configbutler.ai/v1alpha1',
        kind: 'GitTarget',
        metadata: { name, namespace: 'bulk', uid: randomUUID(), generation: 1, creationTimestamp: now },
        spec: {
          repository: { url: `http://127.0.0.1:9/bulk-${i}.git` }, branch: 'main', path: 'live',
          commit: { idleSeconds: IDLE, maxAgeSeconds: 600, mode: 'Auto' }, prune: { mode: 'OnEvent' }, includeClusterNoise: false, suspend: true,
          resources: [{ group: '', resource: 'configmaps', namespaces: ['bulk'] }],
        },
        status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'False', reason: 'Suspended', message: 'spec.suspend is true: nothing is mirrored or committed', observedGeneration: 1, lastTransitionTime: now }] },
      }));
    });
  } finally {
    await store.close();
  }
}

/** Live GitTarget `live-<i>`: namespace team-<i> of the sandbox (one ConfigMap `cm`) into its own repository. */
export async function createLive(fleet: Fleet, count: number): Promise<string[]> {
  const bares: string[] = [];
  for (let i = 0; i < count; i++) {
    bares.push(fleet.remote.createBareRepo(`live-${i}`));
    await ok(fleet.sandbox.kubectl, ['create', 'namespace', `team-${i}`]);
    await ok(fleet.sandbox.kubectl, ['create', 'configmap', 'cm', '-n', `team-${i}`, '--from-literal=key=v0']);
    const r = await fleet.replicas[0]!.request('POST', ns('default'), {
      body: {
        apiVersion: 'configbutler.ai/v1alpha1',
        kind: 'GitTarget',
        metadata: { name: `live-${i}` },
        spec: {
          repository: { url: fleet.remote.url(`live-${i}`) },
          branch: 'main',
          path: 'live',
          commit: { idleSeconds: IDLE },
          resources: [{ group: '', resource: 'configmaps', namespaces: [`team-${i}`] }],
        },
      },
    });
    assert.equal(r.status, 201, r.text);
  }
  await until(async () => (await Promise.all(bares.map((b) => commits(b)))).every((c) => c.length === 1), 'every live GitTarget to push its snapshot', 60_000, 200);
  return bares;
}

/** Waits until every replica in `live` agrees there are `live.length` replicas and their shares add up to `total`. */
export async function settled(live: StartedServer[], total: number, ms: number): Promise<ReplicaMetrics[]> {
  let last: ReplicaMetrics[] = [];
  await until(async () => {
    last = await Promise.all(live.map(replicaMetrics));
    return last.every((m) => m.live === live.length) && last.reduce((a, m) => a + m.owned, 0) === total;
  }, `${live.length} replicas to agree on the members and share ${total} GitTargets`, ms, 250).catch((e) => {
    throw new Error(`${(e as Error).message}; last metrics ${JSON.stringify(last)}`);
  });
  return last;
}

/** Every share within ±10% of total/replicas. */
export function assertEven(shares: number[], total: number): void {
  const mean = total / shares.length;
  for (const s of shares) assert.ok(Math.abs(s - mean) <= mean * 0.1, `share ${s} of ${total} over ${shares.length} replicas is within ±10% of ${mean.toFixed(1)} (shares ${shares.join(', ')})`);
}

/** Each live GitTarget's leases held together: one per running mirror. */
export async function leasesHeld(live: StartedServer[]): Promise<number> {
  return (await Promise.all(live.map(replicaMetrics))).reduce((a, m) => a + m.held, 0);
}
