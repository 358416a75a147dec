// The per-GitTarget mirror against a real list/watch source (our own server's configbutler.ai
// resources), with a WindowSink that records what it is handed: the contract between the mirror
// and the commit windows (snapshot gating, no-op suppression, deletionTimestamp, prune modes).
// The end-to-end path through the real windows and git is in mirror-e2e.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { startServer, ns, gitTarget, type StartedServer } from '../support/server.js';
import { TargetMirror, type MirrorReport, type MirrorSpec } from '../../src/controllers/mirror/target.js';
import type { PendingChange, SnapshotInput, TargetKey, WindowOutcome, WindowSink } from '../../src/controllers/windows/types.js';
import { createLogger } from '../../src/metrics/logger.js';
import { GitEngine } from '../../src/git/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let server: StartedServer;
let config: KubeConfig;

class RecordingSink implements WindowSink {
  added: PendingChange[][] = [];
  snapshots: SnapshotInput[] = [];
  private listeners: Array<(t: TargetKey, id: string, o: WindowOutcome) => void> = [];
  async add(_t: TargetKey, changes: PendingChange[]) {
    this.added.push(changes);
  }
  async snapshot(t: TargetKey, input: SnapshotInput) {
    this.snapshots.push(input);
    setTimeout(() => this.listeners.forEach((l) => l(t, input.id, { outcome: 'Committed', sha: 'abc', time: new Date().toISOString() })), 10);
  }
  async snapshotOutcome() {
    return undefined;
  }
  onSnapshotLanded(l: (t: TargetKey, id: string, o: WindowOutcome) => void) {
    this.listeners.push(l);
    return () => (this.listeners = this.listeners.filter((x) => x !== l));
  }
  /** Every change as "op name[ label v]". */
  flat(): string[] {
    return this.added.flat().map((c) => (c.op === 'write' ? `write ${c.object.metadata.name} ${c.object.metadata.labels?.v ?? ''}`.trim() : `delete ${c.ref.name}`));
  }
}

async function until<T>(what: string, fn: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const log = createLogger('error');
const key: TargetKey = { cluster: '_', namespace: 'default', name: 't', uid: 'u1' };

function mirror(spec: Partial<MirrorSpec>, sink: RecordingSink, reports: MirrorReport[] = []) {
  return new TargetMirror({
    key,
    generation: 1,
    spec: { resources: [], prune: 'OnEvent', includeClusterNoise: false, ...spec },
    config,
    sink,
    log,
    onReport: (r) => reports.push(r),
    reflector: { backoffInitialMs: 100 },
  });
}

async function put(namespace: string, name: string, labels: Record<string, string>, extra: Record<string, unknown> = {}) {
  const path = `${ns(namespace)}/${name}`;
  const cur = await server.get(path);
  if (cur.status === 404) {
    const body = gitTarget(name, namespace, { labels });
    Object.assign(body.metadata, extra);
    const r = await server.request('POST', ns(namespace), { body });
    assert.equal(r.status, 201, r.text);
    return r.body;
  }
  const r = await server.request('PATCH', path, { body: { metadata: { labels, ...extra } }, contentType: 'application/merge-patch+json' });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

before(async () => {
  server = await startServer(['--event-log-retention', '5', '--controllers=none']);
  config = new KubeConfig();
  config.loadFromFile(server.kubeconfig);
});
after(async () => server?.stop());

test('one snapshot after every stream listed; sanitized; then changes, no-ops suppressed', { timeout: 30_000 }, async () => {
  await put('snap-a', 'one', { v: '1' });
  await put('snap-b', 'two', { v: '1' });
  await put('snap-c', 'outside', { v: '1' });
  const sink = new RecordingSink();
  const reports: MirrorReport[] = [];
  const m = mirror({ resources: [{ group: 'configbutler.ai', resource: 'gittargets', namespaces: ['snap-a', 'snap-b'] }] }, sink, reports);
  await m.start();
  try {
    await until('snapshot', () => sink.snapshots.length === 1);
    const snap = sink.snapshots[0]!;
    assert.deepEqual(
      snap.writes.map((w) => w.op === 'write' && w.object),
      [
        { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'one', namespace: 'snap-a', labels: { v: '1' } }, spec: gitTarget('one').spec },
        { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'two', namespace: 'snap-b', labels: { v: '1' } }, spec: gitTarget('two').spec },
      ].map((o) => ({ ...o, spec: { ...o.spec, commit: { idleSeconds: 5, maxAgeSeconds: 600, mode: 'Auto' }, prune: { mode: 'OnEvent' }, includeClusterNoise: false, suspend: false } })),
    );
    assert.equal(snap.writes[0]!.op === 'write' && snap.writes[0]!.resource, 'gittargets');
    await until('synced', () => reports.at(-1)?.synced.status === 'True');
    assert.deepEqual(reports.at(-1)!.synced, { status: 'True', reason: 'Synced', message: 'snapshot committed as abc' });
    assert.equal(reports.at(-1)!.streamsReady, 2);
    assert.equal(reports.at(-1)!.streamsTotal, 2);

    await put('snap-a', 'one', { v: '2' });
    // A status-only write changes nothing that reaches Git.
    const cur = (await server.get(`${ns('snap-b')}/two`)).body;
    const st = await server.request('PUT', `${ns('snap-b')}/two/status`, { body: { ...cur, status: { pendingChanges: 3 } } });
    assert.equal(st.status, 200, st.text);
    await put('snap-c', 'outside', { v: '2' });
    await put('snap-b', 'three', { v: '1' });
    await until('two changes', () => sink.flat().length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(sink.flat(), ['write one 2', 'write three 1']);
  } finally {
    await m.stop();
  }
});

test('deletionTimestamp is the delete; the final DELETED adds nothing; prune Never keeps files', { timeout: 30_000 }, async () => {
  await put('fin', 'held', { v: '1' }, { finalizers: ['example.com/hold'] });
  await put('fin', 'plain', { v: '1' });
  for (const prune of ['OnEvent', 'Never'] as const) {
    const sink = new RecordingSink();
    const m = mirror({ prune, resources: [{ group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets', namespaces: ['fin'] }] }, sink);
    await m.start();
    try {
      await until('snapshot', () => sink.snapshots.length === 1);
      if (prune === 'OnEvent') {
        assert.equal((await server.request('DELETE', `${ns('fin')}/held`)).status, 200);
        await until('delete', () => sink.flat().length === 1);
        assert.deepEqual(sink.flat(), ['delete held']);
        const r = await server.request('PATCH', `${ns('fin')}/held`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
        assert.equal(r.status, 200, r.text);
        assert.equal((await server.get(`${ns('fin')}/held`)).status, 404);
        await new Promise((res) => setTimeout(res, 300));
        assert.deepEqual(sink.flat(), ['delete held'], 'the object gone for good is no second delete');
      } else {
        assert.equal((await server.request('DELETE', `${ns('fin')}/plain`)).status, 200);
        await put('fin', 'after', { v: '1' });
        await until('write', () => sink.flat().length === 1);
        assert.deepEqual(sink.flat(), ['write after 1'], 'prune Never: the delete reaches no window');
      }
    } finally {
      await m.stop();
    }
  }
});

test('labelSelector filters (on delivery from the shared watch, source/shared-watch.ts); leaving the selection deletes the file', { timeout: 30_000 }, async () => {
  await put('sel', 'in', { v: '1', app: 'x' });
  await put('sel', 'out', { v: '1', app: 'y' });
  const sink = new RecordingSink();
  const m = mirror({ resources: [{ group: 'configbutler.ai', resource: 'gittargets', namespaces: ['sel'], labelSelector: 'app=x' }] }, sink);
  await m.start();
  try {
    await until('snapshot', () => sink.snapshots.length === 1);
    assert.deepEqual(sink.snapshots[0]!.writes.map((w) => w.op === 'write' && w.object.metadata.name), ['in']);
    await put('sel', 'in', { v: '1', app: 'z' });
    await until('delete', () => sink.flat().length === 1);
    assert.deepEqual(sink.flat(), ['delete in']);
  } finally {
    await m.stop();
  }
});

test('an unknown type is reported and nothing is mirrored', { timeout: 30_000 }, async () => {
  const sink = new RecordingSink();
  const reports: MirrorReport[] = [];
  const m = mirror({ resources: [{ group: 'configbutler.ai', resource: 'gittargets' }, { group: 'configbutler.ai', resource: 'widgets' }] }, sink, reports);
  await m.start();
  try {
    assert.deepEqual(reports.at(-1)!.unresolved, ['the source serves no resource "widgets" in configbutler.ai/v1alpha1']);
    assert.equal(reports.at(-1)!.streamsTotal, 0);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sink.snapshots.length, 0);
  } finally {
    await m.stop();
  }
});

test('410 on resume: the re-list is reconciled (missed writes and deletes); a re-list that would empty the folder needs prune Always', { timeout: 40_000 }, async () => {
  for (const prune of ['OnEvent', 'Always'] as const) {
    const nsName = `gone-${prune.toLowerCase()}`;
    await put(nsName, 'keep', { v: '1' });
    await put(nsName, 'drop', { v: '1' });
    const sink = new RecordingSink();
    let failNext = false;
    const realAdd = sink.add.bind(sink);
    sink.add = async (t, c) => {
      if (failNext) {
        failNext = false;
        throw new Error('store unavailable');
      }
      return realAdd(t, c);
    };
    const m = new TargetMirror({
      key,
      generation: 1,
      spec: { resources: [{ group: 'configbutler.ai', resource: 'gittargets', namespaces: [nsName] }], prune, includeClusterNoise: false },
      config,
      sink,
      log,
      onReport: () => undefined,
      reflector: { backoffInitialMs: 2500, backoffMaxMs: 2500 },
    });
    await m.start();
    try {
      await until('snapshot', () => sink.snapshots.length === 1);
      failNext = true;
      await put(nsName, 'keep', { v: '2' }); // refused by the sink: the stream backs off
      assert.equal((await server.request('DELETE', `${ns(nsName)}/drop`)).status, 200);
      for (let i = 0; i < 6; i++) await put(nsName, 'keep', { v: `${3 + i}` }); // past the 5 retained events
      await until('reconciled', () => sink.flat().length >= 2, 20_000);
      assert.deepEqual(sink.flat().sort(), ['delete drop', 'write keep 8']);
      // Now everything goes while the stream is behind: OnEvent keeps the files, Always removes them.
      sink.added = [];
      failNext = true;
      await put(nsName, 'keep', { v: '9' });
      assert.equal((await server.request('DELETE', `${ns(nsName)}/keep`)).status, 200);
      for (let i = 0; i < 6; i++) await put(nsName, `tmp${i}`, { v: '1' });
      for (let i = 0; i < 6; i++) assert.equal((await server.request('DELETE', `${ns(nsName)}/tmp${i}`)).status, 200);
      await new Promise((r) => setTimeout(r, 5_000));
      assert.deepEqual(sink.flat(), prune === 'Always' ? ['delete keep'] : []);
    } finally {
      await m.stop();
    }
  }
});

test('prune Always: the snapshot deletes what the git engine lists and the source lacks; a listing that fails deletes nothing', { timeout: 30_000 }, async () => {
  await put('listed', 'here', { v: '1' });
  const dataDir = mkdtempSync(join(tmpdir(), 'target-listing-'));
  const engine = new GitEngine({ allowInsecureCredentials: true,  dataDir });
  try {
    // The folder of a real repository holds `here` (still in the source) and `gone` (not).
    const url = 'local:listing';
    const obj = (name: string) => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'listed' }, spec: {} });
    const me = { name: 'T', email: 't@example.com' };
    await engine.commit({ repository: { url }, branch: 'main', folder: 'f', changes: ['here', 'gone'].map((n) => ({ op: 'write' as const, object: obj(n), resource: 'gittargets' })), author: me, message: 'seed' });
    for (const [repoURL, expected] of [
      [url, ['gone']],
      [`file://${join(dataDir, 'missing.git')}`, undefined],
    ] as const) {
      const sink = new RecordingSink();
      const m = new TargetMirror({
        key,
        generation: 1,
        spec: { resources: [{ group: 'configbutler.ai', resource: 'gittargets', namespaces: ['listed'] }], prune: 'Always', includeClusterNoise: false },
        config,
        sink,
        log,
        onReport: () => undefined,
        folderListing: () => engine.listFolder({ repository: { url: repoURL }, branch: 'main', folder: 'f' }),
      });
      await m.start();
      try {
        await until('snapshot', () => sink.snapshots.length === 1);
        const snap = sink.snapshots[0]!;
        assert.deepEqual(snap.writes.map((w) => w.op === 'write' && w.object.metadata.name), ['here']);
        assert.deepEqual(snap.deletes?.map((r) => `${r.apiVersion} ${r.kind} ${r.namespace}/${r.name}`), expected?.map((n) => `configbutler.ai/ GitTarget listed/${n}`), repoURL);
      } finally {
        await m.stop();
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
