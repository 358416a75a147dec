// A change arriving for a window starts the git worker (src/controllers/windows/sink.ts onAdd →
// CommitEngine.warm, wired in src/controllers/windows/controller.ts): a worker that ended for being
// idle (src/git/worker.ts WORKER_IDLE_EXIT_MS) then loads while the window waits out its idle
// seconds, instead of after it closes (~0.7 s of the first commit after a quiet spell).
// Real embedded store, real window records, real worker thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { GitWorker } from '../../src/git/index.js';
import { until, withDeadline } from '../support/deadline.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir } from './harness.js';

test('a change for a window starts a git worker that had ended for being idle, before any commit', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'warm-on-change-'));
  const store = await createStore({ storage: 'embedded', dataDir });
  const worker = new GitWorker({ allowInsecureCredentials: true, dataDir, idleExitMs: 300 });
  t.after(async () => {
    await worker.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const sink = new StoreWindowSink(new WindowRecords(store), () => undefined, undefined, Date.now, undefined, undefined, () => worker.warm());
  const key = { cluster: '_', namespace: 'team-a', name: 'quiet', uid: 'u-1' };

  worker.warm();
  assert.ok(worker.running);
  await until(() => !worker.running, 'the idle worker to end', 15_000);
  await sink.add(key, []);
  assert.equal(worker.running, false, 'no change, no worker');
  await sink.add(key, [configMap('a', { v: '1' })]);
  assert.equal(worker.running, true, 'the change started the worker');
});

// The whole path with the windows controller: after the worker ended for being idle, an edit's
// window starts it, and the worker has loaded its modules before the window closes, so the commit
// does not wait for a cold start beyond the window's idle time. Compared as an order of events on
// one clock (ready, then closed), not as a duration, so a loaded machine does not decide it; the
// 3 s window is what the start must fit in (~0.2-0.9 s here, loaded).
test('after the workers ended, the worker is ready before the first window closes', { timeout: 90_000 }, async (t) => {
  const dir = tempDir(t, 'warm-window-');
  const remote = await gitServer(t);
  const committed: Array<{ closed: number; engine: number }> = [];
  const h = await startHarness(t, {
    dataDir: dir,
    // keepWarmMs 0: the first edit does not keep the worker, so the second finds it gone.
    engine: { idleExitMs: 200, keepWarmMs: 0 },
    logLines: (l) => {
      const o = JSON.parse(l) as { msg?: string; at?: { closed: number; engine: number } };
      if (o.msg === 'window committed' && o.at) committed.push(o.at);
    },
  });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenants', remote.url('config'), { idleSeconds: 3 });
  const sink = h.running.sink!;
  await sink.add(key, [configMap('a', { v: '1' })]);
  await until(() => committed.length === 1, 'the first window committed', 30_000);
  await until(() => !h.engine.running, 'the idle worker to end', 15_000);

  await sink.add(key, [configMap('a', { v: '2' })]);
  assert.equal(h.engine.running, true, 'the change started the worker');
  await withDeadline(h.engine.whenReady(), 'the worker to be ready', 30_000);
  const readyAt = Date.now();
  await until(() => committed.length === 2, 'the second window committed', 30_000);
  const at = committed[1]!;
  assert.ok(readyAt <= at.closed, `the worker was ready ${readyAt - at.closed} ms after the window closed`);
  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.equal(await c.read('clusters/dev/team-a/configmaps/a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team-a\ndata:\n  v: "2"\n');
  assert.equal(c.log.length, 2);
});
