// Benchmarks write their raw figures as JSON (bench/common/results.ts) and docs/benchmarks.md's
// tables are generated from the newest file per scenario (scripts/bench-report.mjs), so a table
// cannot drift from what was measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, baselineSpread, beginRun, spread, type BenchRecord } from '../../bench/common/results.js';

const REPORT = join(REPO_ROOT, 'scripts', 'bench-report.mjs');

function withResultsDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'bench-results-test-'));
  const before = process.env.BENCH_RESULTS_DIR;
  process.env.BENCH_RESULTS_DIR = dir;
  try {
    return fn(dir);
  } finally {
    if (before === undefined) delete process.env.BENCH_RESULTS_DIR;
    else process.env.BENCH_RESULTS_DIR = before;
    rmSync(dir, { recursive: true, force: true });
  }
}

test('spread: median and range of the samples', () => {
  assert.deepEqual(spread([5, 1, 3]), { value: 3, valueRange: [1, 5], n: 3 });
  assert.deepEqual(spread([4, 1, 3, 2]), { value: 2.5, valueRange: [1, 4], n: 4 });
  assert.deepEqual(baselineSpread([7, 9, 8]), { baseline: 8, baselineRange: [7, 9] });
});

test('a run writes one JSON file with commit, machine facts, samples and summary', () => {
  withResultsDir((dir) => {
    const run = beginRun({ bench: 'demo', scenario: 'demo.get', title: 'GET', columns: { value: 'server', baseline: 'floor' }, params: { rounds: 3 } });
    run.samples('server req/s', [100.12345, 200, 300]);
    run.row({ metric: 'GET', unit: 'req/s', ...spread([100, 200, 300]), ...baselineSpread([400, 400, 400]), ratio: 0.5, ratioStyle: 'percent', target: '≥ 50% of floor', met: true });
    run.pin('load generator', 'taskset -c 1');
    const file = run.write()!;
    assert.deepEqual(readdirSync(dir), [file.slice(dir.length + 1)]);
    assert.match(file.slice(dir.length + 1), /^demo\.get--\d{8}T\d{6}Z--[0-9a-f]{7}\.json$/);
    const r = JSON.parse(readFileSync(file, 'utf8')) as BenchRecord;
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    assert.equal(r.schema, 1);
    assert.equal(r.commit, head);
    assert.equal(typeof r.dirty, 'boolean');
    assert.equal(r.bench, 'demo');
    assert.equal(r.scenario, 'demo.get');
    assert.deepEqual(r.params, { rounds: 3 });
    assert.deepEqual(r.samples, { 'server req/s': [100.123, 200, 300] });
    assert.deepEqual(r.pinning, { 'load generator': 'taskset -c 1' });
    assert.equal(r.summary[0]!.value, 200);
    assert.deepEqual(r.summary[0]!.valueRange, [100, 300]);
    assert.equal(r.machine.node, process.version);
    assert.ok(r.machine.cores >= 1 && r.machine.cpuModel.length > 0);
    assert.equal(r.machine.loadAverageStart.length, 3);
    assert.equal(r.machine.loadAverageEnd!.length, 3);
    assert.match(r.machine.redis ?? '', /^\d+\.\d+\.\d+$/);
    assert.ok(Date.parse(r.finishedAt!) >= Date.parse(r.date));
  });
});

function record(over: Partial<BenchRecord> & Pick<BenchRecord, 'scenario' | 'date' | 'summary'>): BenchRecord {
  return {
    schema: 1,
    bench: 'demo',
    title: 't',
    columns: { value: 'server', baseline: 'floor' },
    order: 0,
    command: 'x',
    params: {},
    commit: 'abcdef0123456789',
    dirty: false,
    machine: { cpuModel: 'Test CPU', cores: 2, availableParallelism: 2, cpusAllowed: '0-1', loadAverageStart: [0.5, 0, 0], loadAverageEnd: [1.25, 0, 0], memoryTotalMB: 1, kernel: 'k', node: 'v20.0.0', redis: '7.0.15', git: null },
    samples: {},
    notes: [],
    ...over,
  };
}

test('bench:report replaces only the marked region, from the newest record of each scenario', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-report-test-'));
  try {
    const write = (name: string, r: BenchRecord) => writeFileSync(join(dir, name), JSON.stringify(r));
    write('demo.get--old.json', record({ scenario: 'demo.get', date: '2026-11-29T10:00:00.000Z', summary: [{ metric: 'GET old', unit: 'req/s', value: 1 }] }));
    write('demo.get--new.json', record({ scenario: 'demo.get', date: '2026-11-30T10:00:00.000Z', dirty: true, summary: [{ metric: 'GET', unit: 'req/s', value: 7325.4, valueRange: [7000, 7400], n: 5, baseline: 7397, ratio: 0.99, ratioStyle: 'percent', target: '≥ 50% of floor', met: true, notes: 'a | b' }] }));
    write('demo.list--x.json', record({ scenario: 'demo.list', order: -1, date: '2026-11-28T09:00:00.000Z', pinning: { server: 'cpu 0' }, notes: ['loaded'], summary: [{ metric: 'LIST', unit: 'ms', value: 78.84, baseline: 108.3, ratio: 0.728, target: '≤ 3× floor', met: false }] }));
    write('other.x--y.json', record({ bench: 'other', scenario: 'other.x', date: '2026-11-30T11:00:00.000Z', summary: [{ metric: 'other', unit: 'ms', value: 1 }] }));
    writeFileSync(join(dir, 'broken.json'), '{');
    write('demo.get--smoke.json', record({ scenario: 'demo.get', date: '2026-12-01T10:00:00.000Z', params: { mode: 'smoke' }, summary: [{ metric: 'GET smoke', unit: 'req/s', value: 1 }] }));
    const doc = join(dir, 'doc.md');
    const before = 'intro prose\n<!-- bench:report demo BEGIN -->\nstale table\n<!-- bench:report demo END -->\nmiddle\n<!-- bench:report none BEGIN -->\n<!-- bench:report none END -->\nend prose\n';
    writeFileSync(doc, before);
    const check = spawnSync(process.execPath, [REPORT, '--results', dir, '--doc', doc, '--check'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(check.status, 1, check.stderr);
    assert.equal(readFileSync(doc, 'utf8'), before);
    const r = spawnSync(process.execPath, [REPORT, '--results', dir, '--doc', doc], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /skipping broken\.json/);
    assert.match(r.stderr, /skipping demo\.get--smoke\.json: a smoke run/);
    assert.equal(
      readFileSync(doc, 'utf8'),
      [
        'intro prose',
        '<!-- bench:report demo BEGIN -->',
        '<!-- generated by `npm run bench:report` from bench/results/*.json: do not edit by hand -->',
        '| metric | server | floor | ratio | target | result | notes |',
        '|---|---:|---:|---:|---|---|---|',
        '| LIST (ms) | 78.8 | 108 | 0.73× | ≤ 3× floor | MISSED |  |',
        '| GET (req/s) | 7,325 (7,000–7,400) | 7,397 | 99% | ≥ 50% of floor | MET | median of 5; a \\| b |',
        '',
        'Missed in these runs: LIST.',
        'Figures are medians, with (min–max) over the repetitions where there were several.',
        '',
        'Runs:',
        '- `demo.list`: 2026-11-28 09:00:00 UTC, commit abcdef0, 2 × Test CPU, node v20.0.0, redis 7.0.15; pinned: server cpu 0, load average 0.50 → 1.25 ([demo.list--x.json](../bench/results/demo.list--x.json))',
        '- `demo.get`: 2026-11-30 10:00:00 UTC, commit abcdef0 + uncommitted changes, 2 × Test CPU, node v20.0.0, redis 7.0.15, load average 0.50 → 1.25 ([demo.get--new.json](../bench/results/demo.get--new.json))',
        '',
        'Notes recorded by the runs:',
        '- `demo.list`: loaded',
        '<!-- bench:report demo END -->',
        'middle',
        '<!-- bench:report none BEGIN -->',
        '<!-- generated by `npm run bench:report` from bench/results/*.json: do not edit by hand -->',
        '_No results for `none` in bench/results/ yet: run `npm run bench -- none`, then `npm run bench:report`._',
        '<!-- bench:report none END -->',
        'end prose',
        '',
      ].join('\n'),
    );
    const again = spawnSync(process.execPath, [REPORT, '--results', dir, '--doc', doc, '--check'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(again.status, 0, again.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docs/benchmarks.md and docs/security.md (the attack table) are what bench/results/ generates', () => {
  const r = spawnSync(process.execPath, [REPORT, '--check'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});
