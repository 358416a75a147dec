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
import { until } from '../support/deadline.js';
import { configMap } from './harness.js';

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
