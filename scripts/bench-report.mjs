#!/usr/bin/env node
// Rebuilds docs/benchmarks.md's tables (and docs/security.md's attack table) from the raw results in bench/results/*.json (written by
// bench/common/results.ts, one file per scenario run): for each bench, the newest file (by its
// `date`) of every scenario of that bench. Only the regions between these markers are replaced;
// everything outside them is hand-written prose and stays as it is:
//
//   <!-- bench:report api BEGIN -->
//   ... generated ...
//   <!-- bench:report api END -->
//
// Usage: npm run bench:report [-- --results DIR] [--doc FILE] [--check]
//   --doc    one document instead of the default ones (docs/benchmarks.md, docs/security.md)
//   --check  exit 1 (and change nothing) if a document is not what the results generate.
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : def;
};
const resultsDir = opt('results', join(root, 'bench', 'results'));
const docPaths = opt('doc') ? [opt('doc')] : [join(root, 'docs', 'benchmarks.md'), join(root, 'docs', 'security.md')];
const check = argv.includes('--check');

/** Every record, newest first per scenario; files that do not parse are named and skipped. */
function loadRecords(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    try {
      const r = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      if (r.schema !== 1 || !r.bench || !r.scenario || !Array.isArray(r.summary)) throw new Error('not a bench record (schema 1)');
      // Smoke runs check that a bench works; their figures are not results.
      if (r.params?.mode === 'smoke') throw new Error('a smoke run');
      out.push({ ...r, file: f });
    } catch (e) {
      process.stderr.write(`bench:report: skipping ${f}: ${e.message}\n`);
    }
  }
  return out;
}

/** The newest record of each scenario of `bench`, in table order. */
export function newestPerScenario(records, bench) {
  const best = new Map();
  for (const r of records.filter((x) => x.bench === bench)) {
    const cur = best.get(r.scenario);
    if (!cur || r.date > cur.date || (r.date === cur.date && r.file > cur.file)) best.set(r.scenario, r);
  }
  return [...best.values()].sort((a, b) => (a.order ?? 0) - (b.order ?? 0) || a.scenario.localeCompare(b.scenario));
}

const num = (x, digits) =>
  Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';
const digitsFor = (row, x) => row.digits ?? (Math.abs(x) >= 100 ? 0 : 1);
function cell(row, x, range) {
  if (x === undefined || x === null) return '—';
  const d = digitsFor(row, x);
  const r = range && range[0] !== range[1] ? ` (${num(range[0], d)}–${num(range[1], d)})` : '';
  return `${num(x, d)}${r}`;
}
function ratioCell(row) {
  if (row.ratio === undefined || row.ratio === null) return '—';
  return row.ratioStyle === 'percent' ? `${num(100 * row.ratio, 0)}%` : `${num(row.ratio, 2)}×`;
}
const result = (row) => (row.met === undefined || row.met === null ? '—' : row.met ? 'MET' : 'MISSED');
const esc = (s) => String(s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');
const load = (l) => (Array.isArray(l) ? num(l[0], 2) : '?');

function machine(r) {
  const m = r.machine ?? {};
  const pin = r.pinning ? `; pinned: ${Object.entries(r.pinning).map(([k, v]) => `${k} ${v}`).join(', ')}` : '';
  const tools = [`node ${m.node ?? '?'}`, m.redis ? `redis ${m.redis}` : '', m.git ? `git ${m.git}` : ''].filter(Boolean).join(', ');
  return `${m.cores ?? '?'} × ${m.cpuModel ?? '?'}, ${tools}${pin}`;
}

function source(r, withMachine) {
  const m = r.machine ?? {};
  const commit = r.commit ? `${r.commit.slice(0, 7)}${r.dirty ? ' + uncommitted changes' : ''}` : 'no commit';
  // What a run measured that its metric names do not say (a list's length, another build).
  const what = [r.params?.items ? `${r.params.items.toLocaleString('en-US')} list items` : '', r.params?.serverMain ? `server ${r.params.serverMain}` : '']
    .filter(Boolean)
    .join(', ');
  return (
    `\`${r.scenario}\`: ${what ? `${what}; ` : ''}${r.date.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}, commit ${commit}, ` +
    `${withMachine ? `${machine(r)}, ` : ''}load average ${load(m.loadAverageStart)} → ${load(m.loadAverageEnd)} ` +
    `([${r.file}](../bench/results/${r.file}))`
  );
}

/** The generated Markdown for one bench (without the markers). */
export function renderBench(records, bench) {
  const recs = newestPerScenario(records, bench);
  if (recs.length === 0) return `_No results for \`${bench}\` in bench/results/ yet: run \`npm run bench -- ${bench}\`, then \`npm run bench:report\`._`;
  const cols = recs[0].columns ?? { value: 'value', baseline: 'baseline' };
  const lines = [
    `| metric | ${esc(cols.value)} | ${esc(cols.baseline)} | ratio | target | result | notes |`,
    '|---|---:|---:|---:|---|---|---|',
  ];
  for (const r of recs) {
    for (const row of r.summary) {
      const base = cell(row, row.baseline, row.baselineRange);
      const baseCell = row.baselineLabel && base !== '—' ? `${base} (${esc(row.baselineLabel)})` : base;
      const n = row.n ? `median of ${row.n}` : '';
      lines.push(
        `| ${esc(row.metric)} (${esc(row.unit)}) | ${cell(row, row.value, row.valueRange)} | ${baseCell} | ${ratioCell(row)} | ${esc(row.target ?? '(measured)')} | ${result(row)} | ${esc([n, row.notes].filter(Boolean).join('; '))} |`,
      );
    }
  }
  const missed = recs.flatMap((r) => r.summary.filter((x) => x.met === false).map((x) => x.metric));
  lines.push('');
  lines.push(missed.length ? `Missed in these runs: ${missed.map(esc).join('; ')}.` : 'No target missed in these runs.');
  lines.push('Figures are medians, with (min–max) over the repetitions where there were several.');
  lines.push('');
  const machines = new Set(recs.map(machine));
  if (machines.size === 1) lines.push(`Runs (${[...machines][0]}):`);
  else lines.push('Runs:');
  for (const r of recs) lines.push(`- ${source(r, machines.size > 1)}`);
  const notes = recs.flatMap((r) => (r.notes ?? []).map((n) => `- \`${r.scenario}\`: ${n}`));
  if (notes.length) {
    lines.push('');
    lines.push('Notes recorded by the runs:');
    lines.push(...notes);
  }
  return lines.join('\n');
}

const MARK = /<!-- bench:report ([a-z0-9.-]+) BEGIN -->\n[\s\S]*?<!-- bench:report \1 END -->/g;

export function renderDoc(doc, records) {
  return doc.replace(MARK, (_all, bench) => {
    const body = renderBench(records, bench);
    return `<!-- bench:report ${bench} BEGIN -->\n<!-- generated by \`npm run bench:report\` from bench/results/*.json: do not edit by hand -->\n${body}\n<!-- bench:report ${bench} END -->`;
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const records = loadRecords(resultsDir);
  let stale = false;
  for (const docPath of docPaths) {
    const doc = readFileSync(docPath, 'utf8');
    const regions = [...doc.matchAll(MARK)].map((m) => m[1]);
    const out = renderDoc(doc, records);
    if (check) {
      if (out !== doc) {
        process.stderr.write(`${docPath} is not what bench/results/ generates: run npm run bench:report\n`);
        stale = true;
      } else process.stdout.write(`${docPath} is up to date (${regions.length} generated regions)\n`);
    } else {
      if (out !== doc) writeFileSync(docPath, out);
      process.stdout.write(`${docPath}: ${regions.length} generated regions (${regions.join(', ')})${out === doc ? ', unchanged' : ', rewritten'}\n`);
    }
  }
  if (stale) process.exit(1);
}
