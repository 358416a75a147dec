// Raw benchmark figures as JSON, one file per scenario run, under bench/results/.
// docs/benchmarks.md's tables are generated from the newest file of each scenario by
// `npm run bench:report` (scripts/bench-report.mjs), so a table always says which commit, machine
// and load it came from, and a figure cannot be retyped by hand.
//
// Use:
//   const run = beginRun({ bench: 'api', scenario: 'api.get', title: 'GET by name', columns: { value: 'server', baseline: 'floor' } });
//   run.samples('server req/s', perRoundRps);            // every measured repetition, not just the median
//   run.row({ metric: 'GET by name', unit: 'req/s', ...spread(serverRps), baseline: ..., ratio: ..., target: '≥ 50% of floor', met: ... });
//   run.write();                                          // -> bench/results/api.get--20261130T104501Z--3acced3.json
//
// BENCH_RESULTS_DIR overrides the directory (tests); BENCH_RESULTS=off writes nothing (smoke runs).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: this file is bench/common/results.ts, compiled to dist/bench/common/results.js. */
export const REPO_ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));

export interface Spread {
  /** Median of the samples. */
  value: number;
  /** [min, max] of the samples. */
  valueRange?: [number, number];
  /** How many samples the median and range are over. */
  n?: number;
}

export interface SummaryRow {
  /** What is measured, in words (the table's first column). */
  metric: string;
  /** Unit of `value` and `baseline`: 'req/s', 'ms', 'MB', 'ms/list', 'µs/req'. */
  unit: string;
  value: number;
  valueRange?: [number, number];
  n?: number;
  /** The same quantity for the baseline measured in the same run (floor, git CLI, AlwaysAllow …). */
  baseline?: number;
  baselineRange?: [number, number];
  /** Overrides the record's baseline column name for this row (e.g. 'AlwaysAllow'). */
  baselineLabel?: string;
  /** value / baseline (or as the bench defines it; say so in `target` or `notes`). */
  ratio?: number;
  /** How the ratio is printed: 42% or 0.42×. */
  ratioStyle?: 'percent' | 'times';
  /** The target as written in the design or issue, e.g. '≥ 50% of floor'; absent when only measured. */
  target?: string;
  met?: boolean;
  /** Decimal places for value and baseline (default: 0 from 100 up, else 1). */
  digits?: number;
  notes?: string;
}

export interface MachineFacts {
  cpuModel: string;
  /** Logical CPUs the kernel reports. */
  cores: number;
  /** CPUs this process may run on (nproc). */
  availableParallelism: number;
  /** The bench process's own CPU affinity (/proc/self/status Cpus_allowed_list). */
  cpusAllowed: string | null;
  loadAverageStart: [number, number, number];
  loadAverageEnd?: [number, number, number];
  memoryTotalMB: number;
  kernel: string;
  node: string;
  redis: string | null;
  git: string | null;
}

export interface BenchRecord {
  schema: 1;
  /** The `npm run bench -- <bench>` name; one docs/benchmarks.md table per bench. */
  bench: string;
  /** One measured scenario, e.g. 'api.get', 'git.snapshot'. */
  scenario: string;
  title: string;
  /** Column names for value and baseline in the generated table. */
  columns: { value: string; baseline: string };
  /** Sort key of this scenario's rows within the bench's table (then scenario name). */
  order: number;
  command: string;
  params: Record<string, unknown>;
  commit: string | null;
  /** Uncommitted changes outside bench/results/ when the run started. */
  dirty: boolean | null;
  /** Start of the run, ISO 8601 UTC. */
  date: string;
  finishedAt?: string;
  seconds?: number;
  machine: MachineFacts;
  /** How processes were placed on CPUs (taskset), if at all. */
  pinning?: Record<string, string>;
  /** Per-run samples by name: every repetition measured (rates, medians or p99s of one run …). */
  samples: Record<string, number[]>;
  summary: SummaryRow[];
  notes: string[];
}

export interface Run {
  readonly record: BenchRecord;
  samples(name: string, xs: number[]): void;
  row(r: SummaryRow): void;
  note(s: string): void;
  pin(what: string, how: string): void;
  /** Stamps the end (time, load average) and writes the file; returns its path, or undefined if BENCH_RESULTS=off. */
  write(): string | undefined;
}

function tryRun(cmd: string, args: string[], cwd = REPO_ROOT): string | null {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return null;
  }
}

const load3 = (): [number, number, number] => loadavg().map((x) => Math.round(x * 100) / 100) as [number, number, number];

export function machineFacts(): MachineFacts {
  const c = cpus();
  let allowed: string | null = null;
  try {
    allowed = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? null;
  } catch {
    allowed = null;
  }
  return {
    cpuModel: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    availableParallelism: availableParallelism(),
    cpusAllowed: allowed,
    loadAverageStart: load3(),
    memoryTotalMB: Math.round(totalmem() / 1e6),
    kernel: release(),
    node: process.version,
    redis: /v=(\S+)/.exec(tryRun('redis-server', ['--version']) ?? '')?.[1] ?? null,
    git: /git version (\S+)/.exec(tryRun('git', ['--version']) ?? '')?.[1] ?? null,
  };
}

let processGitFacts: { commit: string | null; dirty: boolean | null } | undefined;
/**
 * The commit and dirtiness of the work tree when this process first asked: what the running code
 * was built from, even if the tree is edited while a long bench runs.
 */
export function gitFacts(): { commit: string | null; dirty: boolean | null } {
  if (!processGitFacts) {
    const commit = tryRun('git', ['rev-parse', 'HEAD']);
    const status = tryRun('git', ['status', '--porcelain', '--', '.', ':(exclude)bench/results']);
    processGitFacts = { commit, dirty: status === null ? null : status.length > 0 };
  }
  return processGitFacts;
}

/** Median and [min, max] of `xs`, as a row's value fields. */
export function spread(xs: number[]): Spread {
  if (xs.length === 0) return { value: NaN, n: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { value: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, valueRange: [s[0]!, s[s.length - 1]!], n: s.length };
}

/** The same as `spread`, as a row's baseline fields. */
export function baselineSpread(xs: number[]): { baseline: number; baselineRange?: [number, number] } {
  const s = spread(xs);
  return { baseline: s.value, baselineRange: s.valueRange };
}

export function resultsDir(): string {
  return process.env.BENCH_RESULTS_DIR ?? join(REPO_ROOT, 'bench', 'results');
}

const stamp = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

/**
 * `started`: when a benchmark creates its record only after measuring (it knows then which
 * scenarios it has figures for), the time and machine facts it took before measuring; otherwise
 * they are taken now, at the start of the run.
 */
export function beginRun(opts: {
  bench: string;
  scenario: string;
  title: string;
  columns?: { value: string; baseline: string };
  order?: number;
  params?: Record<string, unknown>;
  started?: { at: number; machine: MachineFacts };
}): Run {
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(opts.scenario)) throw new Error(`scenario name ${JSON.stringify(opts.scenario)}: use lower-case letters, digits, '.' and '-'`);
  const t0 = opts.started?.at ?? Date.now();
  const record: BenchRecord = {
    schema: 1,
    bench: opts.bench,
    scenario: opts.scenario,
    title: opts.title,
    columns: opts.columns ?? { value: 'value', baseline: 'baseline' },
    order: opts.order ?? 0,
    command: process.argv.slice(1).join(' '),
    params: opts.params ?? {},
    ...gitFacts(),
    date: new Date(t0).toISOString(),
    machine: opts.started ? { ...opts.started.machine } : machineFacts(),
    samples: {},
    summary: [],
    notes: [],
  };
  return {
    record,
    samples(name, xs) {
      record.samples[name] = xs.map((x) => Math.round(x * 1000) / 1000);
    },
    row(r) {
      record.summary.push(r);
    },
    note(s) {
      record.notes.push(s);
    },
    pin(what, how) {
      (record.pinning ??= {})[what] = how;
    },
    write() {
      const end = Date.now();
      record.finishedAt = new Date(end).toISOString();
      record.seconds = Math.round((end - t0) / 100) / 10;
      record.machine.loadAverageEnd = load3();
      if (process.env.BENCH_RESULTS === 'off') return undefined;
      const dir = resultsDir();
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${record.scenario}--${stamp(record.date)}--${(record.commit ?? 'nocommit').slice(0, 7)}.json`);
      writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
      process.stderr.write(`results: ${file}\n`);
      return file;
    },
  };
}
