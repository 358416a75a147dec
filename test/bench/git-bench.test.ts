// Smoke run of the git benchmark at a small size: it must finish, compare the engine's tree with
// `git fast-import`'s in every snapshot round (the bench exits 1 if they differ), and write one JSON
// record per scenario with every repetition. No timing is asserted: the figures of a loaded test
// machine mean nothing; the full run is `npm run bench -- git` on a quiet one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, type BenchRecord } from '../../bench/common/results.js';
import { withDeadline } from '../support/deadline.js';

test('bench git --files 200 writes snapshot, change, push and RSS records with same-tree checks', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'git-bench-smoke-'));
  try {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist/bench/git/run.js'), '--files', '200', '--rounds', '3', '--snapshot-rounds', '3'], {
      env: { ...process.env, BENCH_RESULTS_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    child.stderr.on('data', (b: Buffer) => (out += b));
    const code = await withDeadline(new Promise<number | null>((r) => child.once('exit', r)), 'the git bench to finish', 60_000, () => child.kill('SIGKILL'));
    assert.equal(code, 0, out);
    assert.match(out, /snapshot of 200: both sides built tree [0-9a-f]{40} in every round \(8 trees compared\)/);
    const records = readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as BenchRecord);
    assert.deepEqual(records.map((r) => r.scenario).sort(), ['git.change', 'git.push', 'git.rss', 'git.snapshot']);
    const snap = records.find((r) => r.scenario === 'git.snapshot')!;
    assert.deepEqual(Object.keys(snap.samples), ['engine ms', 'git fast-import ms', 'warm-up (not counted): engine ms, git fast-import ms']);
    assert.equal(snap.samples['engine ms']!.length, 3);
    assert.equal(snap.samples['git fast-import ms']!.length, 3);
    const row = snap.summary[0]!;
    assert.equal(row.n, 3);
    assert.ok(row.valueRange![0] <= row.value && row.value <= row.valueRange![1]);
    assert.ok(Number.isFinite(row.baseline) && row.baseline! > 0);
    assert.match(row.notes!, /same tree [0-9a-f]{12} on both sides in every round/);
    for (const s of ['git.change', 'git.push']) {
      const r = records.find((x) => x.scenario === s)!;
      assert.equal(Object.values(r.samples)[0]!.length, 3, s);
      assert.equal(Object.values(r.samples)[1]!.length, 3, s);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
