// A remote outage under a stream of edits must not grow the store with the number of edits:
// `idleSeconds: 0` makes every edit a window of its own, and while the remote is down those windows
// queue behind the one that cannot be pushed. They coalesce per author (record.ts,
// coalesceBacklog), the embedded store's log is compacted by size (durable-log.ts), and the
// internal records keep a short watch history (storage/types.ts, eventLogRetentionOf), so the bytes
// held stay within a bound set by the number of distinct objects. Real components: the embedded
// store on disk or a real redis-server, and a `git http-backend` remote stopped and started again.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { createStore, type Store } from '../../src/storage/index.js';
import { WINDOWS_RESOURCE, type WindowRecord } from '../../src/controllers/windows/record.js';
import { startRedis } from '../support/redis.js';
import { COMMITTER, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;
const OBJECTS = 5;
const EDITS = Number(process.env.BACKLOG_EDITS ?? 2_000);
/** The embedded log is compacted once it passes this many bytes (a small value, to see it happen). */
const COMPACT_BYTES = 2 ** 20;

function dirBytes(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir)) n += statSync(join(dir, f)).size;
  return n;
}

async function usedMemory(url: string): Promise<number> {
  const r = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  try {
    const info = await r.info('memory');
    return Number(/used_memory:(\d+)/.exec(info)![1]);
  } finally {
    r.disconnect();
  }
}

async function remoteLog(url: string): Promise<{ log: string[]; files: Record<string, string> }> {
  const c = await cloneAndCheck(url, 'main');
  try {
    const files: Record<string, string> = {};
    for (const f of c.files) files[f] = await c.read(f);
    return { log: c.log, files };
  } finally {
    c.cleanup();
  }
}

async function record(store: Store): Promise<WindowRecord | undefined> {
  return (await store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' })) as WindowRecord | undefined;
}

interface Measured {
  backend: string;
  edits: number;
  recordBytesPeak: number;
  windowsPeak: number;
  storeBytesBefore?: number;
  storeBytesPeak?: number;
  storeBytesAfter?: number;
  redisUsedMemoryBefore?: number;
  redisUsedMemoryPeak?: number;
  redisUsedMemoryAfter?: number;
  editsPerSecond: number;
  drainMs: number;
}

/**
 * N edits over OBJECTS ConfigMaps while the remote is down; returns what was measured. The first
 * edit's window is the one whose push fails; every later edit queues behind it.
 */
async function backlogRun(t: TestContext, backend: 'embedded' | 'redis', edits: number): Promise<Measured> {
  const dir = tempDir(t, `windows-backlog-${backend}-`);
  const remote = await gitServer(t);
  let store: Store;
  let redisURL: string | undefined;
  if (backend === 'redis') {
    const redis = await startRedis();
    t.after(() => redis.stop());
    redisURL = redis.url;
    store = await createStore({ storage: 'redis', redisUrl: redis.url });
  } else {
    store = await createStore({ storage: 'embedded', dataDir: dir, compactLogBytes: COMPACT_BYTES });
  }
  const h = await startHarness(t, { dataDir: dir, store });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  const sink = h.running.sink!;
  const storeDir = join(dir, 'store');
  const m: Measured = { backend, edits, recordBytesPeak: 0, windowsPeak: 0, editsPerSecond: 0, drainMs: 0 };
  const sample = async () => {
    const r = await record(h.store);
    m.recordBytesPeak = Math.max(m.recordBytesPeak, JSON.stringify(r ?? {}).length);
    m.windowsPeak = Math.max(m.windowsPeak, r?.windows.length ?? 0);
    if (backend === 'embedded') m.storeBytesPeak = Math.max(m.storeBytesPeak ?? 0, dirBytes(storeDir));
    else m.redisUsedMemoryPeak = Math.max(m.redisUsedMemoryPeak ?? 0, await usedMemory(redisURL!));
  };

  // The branch exists, with every object at v0.
  await sink.add(key, Array.from({ length: OBJECTS }, (_, i) => configMap(`cm-${i}`, { v: '0' })));
  // (One commit or five: the first add may come before the controllers' cache has the GitTarget's idleSeconds.)
  await waitFor('an empty record', async () => ((await record(h.store))?.windows.length ?? 1) === 0 || undefined, 30_000, 100);
  const initial = (await remoteLog(remote.authURL('config'))).log.length;
  if (backend === 'embedded') m.storeBytesBefore = dirBytes(storeDir);
  else m.redisUsedMemoryBefore = await usedMemory(redisURL!);

  await remote.stop();
  await sink.add(key, [configMap('cm-0', { v: '1' })]);
  // Its push failed once: from now on what closes behind it coalesces.
  await waitFor('the first failed attempt', async () => (await record(h.store))?.windows[0]?.closing?.failedAt !== undefined || undefined, 40_000, 100);
  const started = Date.now();
  for (let i = 2; i <= edits; i++) {
    await sink.add(key, [configMap(`cm-${(i - 1) % OBJECTS}`, { v: String(i) })]);
    if (i % 200 === 0) await sample();
  }
  m.editsPerSecond = Math.round((edits - 1) / ((Date.now() - started) / 1000));
  await sample();
  console.log(`# backlog during the outage ${JSON.stringify(m)}`);

  const drainStart = Date.now();
  await remote.start();
  await waitFor('the backlog drained', async () => ((await record(h.store))?.windows.length ?? 1) === 0 || undefined, 60_000, 200);
  m.drainMs = Date.now() - drainStart;
  const { log, files } = await remoteLog(remote.authURL('config'));
  // The failed window is its own commit; everything after it is one commit (one author), holding
  // the latest value of every object.
  assert.deepEqual(log.slice(0, 2), [`${BOT}|${BOT}|Update ${OBJECTS} objects in team-a/tenants`, `${BOT}|${BOT}|Update configmaps team-a/cm-0`]);
  assert.equal(log.length, initial + 2, log.join('\n'));
  const last = (j: number) => Math.max(...Array.from({ length: edits }, (_, i) => i + 1).filter((i) => (i - 1) % OBJECTS === j));
  for (let j = 0; j < OBJECTS; j++) {
    assert.equal(files[`clusters/dev/team-a/configmaps/cm-${j}.yaml`], `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${j}\n  namespace: team-a\ndata:\n  v: "${last(j)}"\n`);
  }
  const body = await git(remote.root + '/config.git', 'log', '-1', '--format=%b', 'main');
  // First-seen order: edit 2 touched cm-1, ..., edit 6 cm-0.
  assert.equal(body.trim(), Array.from({ length: OBJECTS }, (_, j) => `- update configmaps team-a/cm-${(j + 1) % OBJECTS}`).join('\n'));
  if (backend === 'embedded') {
    // One more write after the drain is enough to cross the size threshold again at most once.
    m.storeBytesAfter = dirBytes(storeDir);
  } else m.redisUsedMemoryAfter = await usedMemory(redisURL!);
  console.log(`# backlog ${JSON.stringify(m)}`);
  return m;
}

for (const backend of ['embedded', 'redis'] as const) {
  test(`${backend}: ${EDITS} edits of ${OBJECTS} ConfigMaps during a remote outage hold bytes bounded by the objects, then drain to two commits`, { timeout: 240_000 }, async (t) => {
    const m = await backlogRun(t, backend, EDITS);
    // Two windows at most (the failing one and the coalesced one), five small objects.
    assert.ok(m.windowsPeak <= 2, `windows peaked at ${m.windowsPeak}`);
    assert.ok(m.recordBytesPeak < 8 * 1024, `the record peaked at ${m.recordBytesPeak} bytes`);
    if (backend === 'embedded') {
      // The log is compacted at COMPACT_BYTES; the snapshot is the small state.
      assert.ok(m.storeBytesPeak! < 2 * COMPACT_BYTES + m.storeBytesBefore! + 256 * 1024, `store directory peaked at ${m.storeBytesPeak} bytes (before: ${m.storeBytesBefore})`);
      assert.ok(m.storeBytesAfter! < 2 * COMPACT_BYTES + m.storeBytesBefore! + 256 * 1024, `store directory after the drain: ${m.storeBytesAfter} bytes`);
    } else {
      // The internal records keep 1,000 events of history (each: the record and its predecessor).
      const bound = 2 * 1000 * 2 * 8 * 1024;
      assert.ok(m.redisUsedMemoryPeak! - m.redisUsedMemoryBefore! < bound, `used_memory grew ${m.redisUsedMemoryPeak! - m.redisUsedMemoryBefore!} bytes (bound ${bound})`);
    }
  });
}
