// Backlog benchmark: N edits of a few ConfigMaps spread over a remote outage of T seconds, on the
// embedded store and on Redis, with `idleSeconds: 0` (every edit a window of its own). Measures
// what the pending changes hold while the remote is down (the window record, the store directory or
// Redis used_memory, the process RSS) and how the backlog drains once it returns (commits, time).
// The bound (docs/architecture.md, commit windows; docs/storage.md): the record grows with the
// distinct objects only, the embedded log is compacted at max(16 MiB, snapshot), internal records
// keep 1,000 events of history.
// Run: npm run bench -- backlog [--edits 10000] [--outage-seconds 300] [--objects 5] [--backend embedded|redis|both]
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { createStore, type Store } from '../../src/storage/index.js';
import { startControllers } from '../../src/controllers/index.js';
import { parseControllers } from '../../src/controllers/names.js';
import { GitWorker } from '../../src/git/worker.js';
import { createLogger } from '../../src/metrics/logger.js';
import { WINDOWS_RESOURCE, type WindowRecord } from '../../src/controllers/windows/record.js';
import { startGitServer } from '../../test/support/git-server.js';
import { beginRun } from '../common/results.js';
import { cleanup, rssMiB, startRedis, tempDir } from '../common/proc.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : def;
};
const EDITS = Number(arg('edits', '10000'));
const OUTAGE_S = Number(arg('outage-seconds', '300'));
const OBJECTS = Number(arg('objects', '5'));
const BACKENDS = arg('backend', 'both') === 'both' ? (['embedded', 'redis'] as const) : ([arg('backend', 'embedded')] as Array<'embedded' | 'redis'>);
const COMMITTER = { name: 'Bench Bot', email: 'bot@bench.example' };
const GT = { group: 'configbutler.ai', resource: 'gittargets' };
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function dirBytes(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir)) n += statSync(join(dir, f)).size;
  return n;
}

async function waitFor(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

const configMap = (i: number, v: string) => ({ op: 'write' as const, resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'team-a' }, data: { v } } });

async function one(backend: 'embedded' | 'redis') {
  const dir = tempDir(`bench-backlog-${backend}-`);
  const remote = await startGitServer();
  remote.createBareRepo('config');
  let redis: Redis | undefined;
  let store: Store;
  if (backend === 'redis') {
    const r = await startRedis(dir);
    redis = new Redis(r.url);
    store = await createStore({ storage: 'redis', redisUrl: r.url });
  } else store = await createStore({ storage: 'embedded', dataDir: dir });
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis!.info('memory'))![1]);
  const engine = new GitWorker({ dataDir: dir, committerName: COMMITTER.name, committerEmail: COMMITTER.email, lease: store, retryTimeoutMs: 10_000 });
  const running = await startControllers({ store, log: createLogger('error'), engine: async () => engine, committer: COMMITTER }, parseControllers('all'));
  const b64 = (v: string) => Buffer.from(v).toString('base64');
  await store.create({ group: '', resource: 'secrets' }, { cluster: '_', namespace: 'team-a', name: 'git-creds' }, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'git-creds', namespace: 'team-a', uid: randomUUID() }, data: { username: b64(remote.username), password: b64(remote.password) } });
  const uid = randomUUID();
  await store.create(GT, { cluster: '_', namespace: 'team-a', name: 'tenants' }, {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'tenants', namespace: 'team-a', uid, generation: 1, creationTimestamp: new Date().toISOString() },
    spec: { repository: { url: remote.url('config'), secretRef: { name: 'git-creds' } }, branch: 'main', path: 'clusters/dev', commit: { idleSeconds: 0, maxAgeSeconds: 600, mode: 'Auto' }, prune: { mode: 'OnEvent' }, includeClusterNoise: false, suspend: false },
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: new Date().toISOString() }] },
  });
  const key = { cluster: '_', namespace: 'team-a', name: 'tenants', uid };
  const record = async () => (await store.get(WINDOWS_RESOURCE, key)) as WindowRecord | undefined;
  const sink = running.sink!;
  await sleep(500);
  await sink.add(key, Array.from({ length: OBJECTS }, (_, i) => configMap(i, '0')));
  await waitFor('the first commit', async () => ((await record())?.windows.length ?? 1) === 0, 60_000);
  const storeDir = join(dir, 'store');
  const before = { rss: rssMiB(process.pid).rss, store: backend === 'embedded' ? dirBytes(storeDir) : await usedMemory() };
  const peak = { record: 0, windows: 0, store: 0, rss: 0 };
  const sample = async () => {
    const r = await record();
    peak.record = Math.max(peak.record, JSON.stringify(r ?? {}).length);
    peak.windows = Math.max(peak.windows, r?.windows.length ?? 0);
    peak.store = Math.max(peak.store, backend === 'embedded' ? dirBytes(storeDir) : await usedMemory());
    peak.rss = Math.max(peak.rss, rssMiB(process.pid).rss);
  };

  await remote.stop();
  const t0 = Date.now();
  const perEditMs = (OUTAGE_S * 1000) / EDITS;
  for (let i = 1; i <= EDITS; i++) {
    await sink.add(key, [configMap((i - 1) % OBJECTS, String(i))]);
    if (i % 100 === 0) await sample();
    const due = t0 + i * perEditMs;
    if (due > Date.now()) await sleep(due - Date.now());
  }
  await sample();
  const outageS = (Date.now() - t0) / 1000;
  const drain0 = Date.now();
  await remote.start();
  await waitFor('the backlog drained', async () => ((await record())?.windows.length ?? 1) === 0, 300_000);
  const drainMs = Date.now() - drain0;
  const commits = execFileSync('git', ['--git-dir', join(remote.root, 'config.git'), 'rev-list', '--count', 'main'], { encoding: 'utf8' }).trim();
  await sleep(2_000);
  const after = { rss: rssMiB(process.pid).rss, store: backend === 'embedded' ? dirBytes(storeDir) : await usedMemory() };
  await running.stop();
  await engine.close();
  await store.close();
  redis?.disconnect();
  await remote.close();
  await cleanup([dir]);
  return { backend, outageS, before, peak, after, drainMs, commits: Number(commits) };
}

const run = beginRun({
  bench: 'backlog',
  scenario: 'backlog.outage',
  title: `${EDITS.toLocaleString('en-US')} edits of ${OBJECTS} ConfigMaps during a ${OUTAGE_S} s remote outage (idleSeconds 0)`,
  columns: { value: 'measured', baseline: 'before the outage' },
  params: { edits: EDITS, outageSeconds: OUTAGE_S, objects: OBJECTS, backends: BACKENDS },
});
for (const backend of BACKENDS) {
  const m = await one(backend);
  console.log(JSON.stringify(m));
  run.samples(`${backend} raw`, [m.peak.record, m.peak.windows, m.peak.store, m.after.store, m.peak.rss, m.drainMs, m.commits]);
  run.row({ metric: `${backend}: window record at its largest`, unit: 'KB', value: m.peak.record / 1024, digits: 1, target: '65 one-edit windows + distinct objects: < 32 KB', met: m.peak.record < 32 * 1024 });
  run.row({ metric: `${backend}: windows at most`, unit: 'windows', value: m.peak.windows, digits: 0, target: '≤ 66; 2 once the first attempt failed', met: m.peak.windows <= 66, notes: 'before the first attempt fails (the engine retries ~10 s here), more than 64 queued windows coalesce' });
  if (backend === 'embedded') {
    run.row({ metric: 'embedded: store directory, peak during the outage', unit: 'MB', value: m.peak.store / MiB, baseline: m.before.store / MiB, digits: 1, target: '≤ 16 MiB + 2 × state', met: m.peak.store < 16 * MiB + 2 * m.before.store + MiB });
    run.row({ metric: 'embedded: store directory after draining', unit: 'MB', value: m.after.store / MiB, baseline: m.before.store / MiB, digits: 1 });
  } else {
    run.row({ metric: 'redis: used_memory, peak during the outage', unit: 'MB', value: m.peak.store / MiB, baseline: m.before.store / MiB, digits: 1, target: '≤ baseline + 1,000 × 2 records', met: m.peak.store - m.before.store < 1000 * 2 * 8 * 1024 });
    run.row({ metric: 'redis: used_memory after draining', unit: 'MB', value: m.after.store / MiB, baseline: m.before.store / MiB, digits: 1 });
  }
  run.row({ metric: `${backend}: process RSS, peak during the outage`, unit: 'MB', value: m.peak.rss, baseline: m.before.rss, digits: 0 });
  run.row({ metric: `${backend}: drain after the remote returned`, unit: 'ms', value: m.drainMs, digits: 0, notes: `${m.commits} commits on the branch: the ${OBJECTS} edits before the outage (one each), the failed window, one coalesced commit` });
}
console.log(run.write() ?? '(not written)');
