// Callers following one file share its directory watch and its stat poll (src/auth/filewatch.ts):
// the authentication and the registration both follow the serving CA, and two polls a minute were
// two wake-ups of an idle server. Real files and real timers; the stat calls are counted on node's
// own fs (syncBuiltinESMExports makes filewatch.ts's `statSync` import the counting one).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { followedFiles, watchFileContent } from '../../src/auth/filewatch.js';
import { sharedTimerStats } from '../../src/periodic/shared-timer.js';
import { until } from '../support/deadline.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Replaces `path` atomically (a new inode renamed over it), as a mounted Secret's update does. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/** A file holding `text` in a fresh directory, removed after the test: the path. */
function fileIn(t: TestContext, name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'filewatch-shared-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

test('two callers of one file: one directory watch; a replacement reaches each once; stopping one leaves the other', { timeout: 20_000 }, async (t) => {
  const path = fileIn(t, 'ca.crt', 'one');
  const a: string[] = [];
  const b: string[] = [];
  const stopA = watchFileContent(path, 60_000, (text) => a.push(text), (e) => a.push(`error ${e.message}`));
  // The same file by another spelling of its path is the same followed file.
  const stopB = watchFileContent(join(dirname(path), '.', 'ca.crt'), 60_000, (text) => b.push(text), (e) => b.push(`error ${e.message}`));
  t.after(() => {
    stopA();
    stopB();
  });
  assert.deepEqual(followedFiles(), [{ path, callers: 2, dirWatched: true, pollMs: 60_000 }]);

  replace(path, 'two');
  await until(() => a.length > 0 && b.length > 0, 'both callers to see the replacement', 5000);
  await sleep(300); // a second callback would come from the same directory events, 100 ms after
  assert.deepEqual(a, ['two']);
  assert.deepEqual(b, ['two']);

  stopA();
  assert.deepEqual(followedFiles(), [{ path, callers: 1, dirWatched: true, pollMs: 60_000 }]);
  replace(path, 'three');
  await until(() => b.length > 1, 'the remaining caller to see the next replacement', 5000);
  await sleep(300);
  assert.deepEqual(a, ['two']);
  assert.deepEqual(b, ['two', 'three']);

  stopB();
  assert.deepEqual(followedFiles(), []);
});

test('each caller keeps its own baseline: one that starts after a change is not told of it', { timeout: 20_000 }, async (t) => {
  const path = fileIn(t, 'policy.yaml', 'one');
  const a: string[] = [];
  const b: string[] = [];
  const stopA = watchFileContent(path, 60_000, (text) => a.push(text), () => undefined);
  t.after(stopA);
  replace(path, 'two');
  await until(() => a.length > 0, 'the first caller to see the change', 5000);
  const stopB = watchFileContent(path, 60_000, (text) => b.push(text), () => undefined);
  t.after(stopB);
  replace(path, 'three');
  await until(() => a.length > 1 && b.length > 0, 'both callers to see the next change', 5000);
  await sleep(300);
  assert.deepEqual(a, ['two', 'three']);
  assert.deepEqual(b, ['three']);
});

test('two callers polling one file: one stat per poll, at the shorter interval, on the shared timer', { timeout: 20_000 }, async (t) => {
  const path = fileIn(t, 'ca.crt', 'one');
  let stats = 0;
  const writable = fs as { statSync: (...a: unknown[]) => unknown };
  const realStatSync = writable.statSync;
  writable.statSync = (p: unknown, ...rest: unknown[]) => {
    if (p === path) stats++;
    return realStatSync(p, ...rest);
  };
  syncBuiltinESMExports();
  t.after(() => {
    writable.statSync = realStatSync;
    syncBuiltinESMExports();
  });

  const seen: string[] = [];
  const stopA = watchFileContent(path, 200, (text) => seen.push(`a ${text}`), () => undefined);
  const stopB = watchFileContent(path, 100, (text) => seen.push(`b ${text}`), () => undefined);
  t.after(() => {
    stopA();
    stopB();
  });
  assert.equal(stats, 2, 'each caller takes its baseline stat when it starts');
  assert.deepEqual(followedFiles(), [{ path, callers: 2, dirWatched: true, pollMs: 100 }]);
  const w0 = sharedTimerStats().wakeUps;
  const s0 = stats;
  await until(() => sharedTimerStats().wakeUps - w0 >= 8, 'eight polls', 10_000);
  const wakeUps = sharedTimerStats().wakeUps - w0;
  // One stat per wake-up of the shared timer (this file is its only job, and nothing in the
  // directory changed), where each caller's own poll made two.
  assert.equal(stats - s0, wakeUps);
  assert.deepEqual(seen, []);

  // Stopping the caller that asked for 100 ms leaves a 200 ms poll.
  stopB();
  assert.deepEqual(followedFiles(), [{ path, callers: 1, dirWatched: true, pollMs: 200 }]);
});
