// A large snapshot's changes kept apart from the window record (src/controllers/windows/chunks.ts):
// a 2,000-change snapshot is 4 chunk objects and a small record, commits exactly the tree the
// engine builds from the same changes, and leaves no chunk behind; a process killed while writing
// chunks (before the record's compare-and-swap) never yields a commit of part of a snapshot.
// Real embedded store on disk, real processes, real `git http-backend`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { CHUNKS_RESOURCE, type WindowChunk } from '../../src/controllers/windows/chunks.js';
import { WINDOWS_RESOURCE } from '../../src/controllers/windows/record.js';
import type { Store } from '../../src/storage/index.js';
import type { TargetKey } from '../../src/controllers/windows/types.js';
import { COMMITTER, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';

const BOT = `${COMMITTER.name} <${COMMITTER.email}>`;
const writes = (n: number, v = '1') => Array.from({ length: n }, (_, i) => configMap(`cm-${String(i).padStart(4, '0')}`, { i: String(i), v }));

async function chunkNames(store: Store): Promise<string[]> {
  return (await store.list(CHUNKS_RESOURCE, { cluster: '_' })).items.map((o) => o.metadata.name!);
}

async function treeOf(url: string): Promise<{ tree: string; log: string[]; files: number }> {
  const c = await cloneAndCheck(url, 'main');
  try {
    return { tree: (await git(c.dir, 'rev-parse', 'HEAD^{tree}')).trim(), log: c.log, files: c.files.length };
  } finally {
    c.cleanup();
  }
}

test('a 2,000-change snapshot is 4 chunk objects and a small record; it commits the same tree and leaves no chunk', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'windows-chunks-');
  const remote = await gitServer(t);
  remote.createBareRepo('reference');
  const h1 = await startHarness(t, { dataDir: dir, controllers: 'none' });
  await createGitSecret(h1.store, remote);
  const { key } = await createGitTarget(h1.store, 'tenants', remote.url('config'), { idleSeconds: 1 });
  // Not committed in this process (no controllers): what is stored can be looked at first.
  const sink = new StoreWindowSink(new WindowRecords(h1.store), () => undefined);
  // 2,001 writes, one object twice: the latest wins at its first position, as inline windows do.
  await sink.snapshot(key, { id: 'gen1', writes: [...writes(2000, 'old').slice(0, 1), ...writes(2000).slice(1), writes(1)[0]] });
  await sink.snapshot(key, { id: 'gen1', writes: writes(2000, 'other') }); // the same id again: a no-op

  const names = await chunkNames(h1.store);
  assert.equal(names.length, 4);
  const chunks = (await h1.store.list(CHUNKS_RESOURCE, { cluster: '_' })).items as WindowChunk[];
  assert.deepEqual(chunks.map((c) => [c.index, c.total, c.changes.length, c.snapshotId]).sort(), [[0, 4, 500, 'gen1'], [1, 4, 500, 'gen1'], [2, 4, 500, 'gen1'], [3, 4, 500, 'gen1']]);
  assert.ok(names.every((n) => n.startsWith(`${key.uid}.`)), names.join(','));
  const first = chunks.find((c) => c.index === 0)!;
  assert.deepEqual((first.changes[0].change as unknown as { object: { data: unknown } }).object.data, { i: '0', v: '1' });

  const rec = await h1.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  const size = JSON.stringify(rec).length;
  assert.ok(size < 2_000, `the record is ${size} bytes`);
  const w = (rec as unknown as { windows: Array<{ kind: string; chunks: number; chunkedChanges: number; changes: unknown[] }> }).windows;
  assert.deepEqual(w.map((x) => [x.kind, x.chunks, x.chunkedChanges, x.changes.length]), [['snapshot', 4, 2000, 0]]);
  await h1.stop();

  const h2 = await startHarness(t, { dataDir: dir });
  const outcome = await waitFor('snapshot committed', () => h2.running.sink!.snapshotOutcome(key, 'gen1'), 60_000, 200);
  assert.equal(outcome.outcome, 'Committed');
  await waitFor('no chunk left', async () => (await chunkNames(h2.store)).length === 0, 10_000);

  // The engine given the same 2,000 changes at once builds the same tree.
  const ref = await h2.engine.commit({
    repository: { url: remote.url('reference'), credentials: { username: remote.username, password: remote.password } },
    branch: 'main',
    folder: 'clusters/dev',
    changes: writes(2000),
    author: COMMITTER,
    committer: COMMITTER,
    message: 'reference',
  });
  assert.equal(ref.outcome, 'Committed');
  const got = await treeOf(remote.authURL('config'));
  const want = await treeOf(remote.authURL('reference'));
  assert.equal(got.files, 2000);
  assert.equal(got.tree, want.tree);
  assert.deepEqual(got.log, [`${BOT}|${BOT}|Snapshot of team-a/tenants: 2000 objects`]);
  const gt = await h2.store.get({ group: 'configbutler.ai', resource: 'gittargets' }, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  assert.equal((gt?.status as { pendingChanges?: number })?.pendingChanges ?? 0, 0);
});

/** In a child process: the sink's snapshot() of `id`, SIGKILLed once `after` of its chunks are acknowledged. */
async function killedWhileWritingChunks(dataDir: string, key: TargetKey, id: string, n: number, after: number): Promise<NodeJS.Signals | null> {
  const storeUrl = new URL('../../src/storage/index.js', import.meta.url).href;
  const chunksUrl = new URL('../../src/controllers/windows/chunks.js', import.meta.url).href;
  const recordUrl = new URL('../../src/controllers/windows/record.js', import.meta.url).href;
  const sinkUrl = new URL('../../src/controllers/windows/sink.js', import.meta.url).href;
  const script = `
    const { createStore } = await import(${JSON.stringify(storeUrl)});
    const { CHUNKS_RESOURCE } = await import(${JSON.stringify(chunksUrl)});
    const { WindowRecords } = await import(${JSON.stringify(recordUrl)});
    const { StoreWindowSink } = await import(${JSON.stringify(sinkUrl)});
    const store = await createStore({ storage: 'embedded', dataDir: ${JSON.stringify(dataDir)} });
    let written = 0;
    const create = store.create.bind(store);
    // The real store; the process dies right after the ${after}th chunk is durable, as a crash would.
    store.create = async (res, k, o) => {
      const out = await create(res, k, o);
      if (res.resource === CHUNKS_RESOURCE.resource && ++written === ${after}) process.kill(process.pid, 'SIGKILL');
      return out;
    };
    const writes = Array.from({ length: ${n} }, (_, i) => ({ op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-' + String(i).padStart(4, '0'), namespace: 'team-a' }, data: { i: String(i), v: '1' } } }));
    await new StoreWindowSink(new WindowRecords(store), () => undefined).snapshot(${JSON.stringify(key)}, { id: ${JSON.stringify(id)}, writes });
    process.exit(3);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the chunk writer did not die within 30 s'));
    }, 30_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code !== null) reject(new Error(`the chunk writer exited with ${code} instead of being killed`));
      else resolve(signal);
    });
  });
}

test('a process killed after writing half of a snapshot\'s chunks (before the record CAS) commits nothing; the retried snapshot commits all of it once', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'windows-chunks-crash-');
  const remote = await gitServer(t);
  const h1 = await startHarness(t, { dataDir: dir, controllers: 'none' });
  await createGitSecret(h1.store, remote);
  const { key } = await createGitTarget(h1.store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await h1.stop();

  assert.equal(await killedWhileWritingChunks(dir, key, 'gen1', 2000, 2), 'SIGKILL');

  const h2 = await startHarness(t, { dataDir: dir });
  assert.equal((await chunkNames(h2.store)).length, 2, 'the two chunks acknowledged before the kill are on disk');
  // Before the record's CAS: no window refers to them.
  assert.equal(await h2.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' }), undefined);
  // The controllers run: nothing refers to the orphan chunks, so nothing is committed.
  await new Promise((r) => setTimeout(r, 3_000));
  assert.equal((await git('/', 'ls-remote', remote.authURL('config'))).trim(), '');
  const rec = await h2.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  assert.equal(rec, undefined);

  // The mirror retries the snapshot (same id): its chunks overwrite the orphans, and it lands whole, once.
  await h2.running.sink!.snapshot(key, { id: 'gen1', writes: writes(2000) });
  const outcome = await waitFor('snapshot committed', () => h2.running.sink!.snapshotOutcome(key, 'gen1'), 60_000, 200);
  assert.equal(outcome.outcome, 'Committed');
  const got = await treeOf(remote.authURL('config'));
  assert.equal(got.files, 2000);
  assert.deepEqual(got.log, [`${BOT}|${BOT}|Snapshot of team-a/tenants: 2000 objects`]);
  await waitFor('no chunk left', async () => (await chunkNames(h2.store)).length === 0, 10_000);
});

test('a deleted GitTarget takes its pending snapshot\'s chunks and its record with it', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'windows-chunks-gone-');
  const remote = await gitServer(t);
  const h1 = await startHarness(t, { dataDir: dir, controllers: 'none' });
  await createGitSecret(h1.store, remote);
  const { key } = await createGitTarget(h1.store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await new StoreWindowSink(new WindowRecords(h1.store), () => undefined).snapshot(key, { id: 'gen1', writes: writes(1200) });
  assert.equal((await chunkNames(h1.store)).length, 3);
  await h1.store.delete({ group: 'configbutler.ai', resource: 'gittargets' }, { cluster: '_', namespace: 'team-a', name: 'tenants' });
  await h1.stop();

  const h2 = await startHarness(t, { dataDir: dir });
  await waitFor('record and chunks gone', async () => (await chunkNames(h2.store)).length === 0 && (await h2.store.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenants' })) === undefined, 15_000);
  assert.equal((await git('/', 'ls-remote', remote.authURL('config'))).trim(), '');
});
