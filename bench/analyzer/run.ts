// Acceptance-gate scan benchmark: the analyzer's repository scan of a 10,000-file repository
// (every blob read and judged, a verdict per folder) against git itself doing the least that
// reading it takes: `git ls-tree -r` of the branch plus `git cat-file --batch` of every blob it
// lists, measured in the same run, interleaved, several rounds. Target: at most 2× the baseline.
// Run: npm run bench -- analyzer [--files 10000] [--rounds 5]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scanRepository } from '../../src/public/analyzer.js';
import { baselineSpread, beginRun, spread } from '../common/results.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const FILES = arg('files', 10_000);
const ROUNDS = arg('rounds', 5);
if (ROUNDS < 3) throw new Error('--rounds must be at least 3 (median and range)');
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_TERMINAL_PROMPT: '0' };

/** A bare repository with FILES ConfigMaps in the writer's layout (100 per namespace folder), one commit, one pack. */
function buildRepository(dir: string): string {
  const gitDir = join(dir, 'repo.git');
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitDir], { env: ENV });
  let stream = '';
  const files: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const ns = `team-${String(Math.floor(i / 100)).padStart(3, '0')}`;
    const name = `cm-${String(i).padStart(5, '0')}`;
    const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n  labels:\n    app: bench\ndata:\n  index: "${i}"\n  value: value-${i}\n`;
    files.push(`M 100644 inline tenants/${ns}/configmaps/${name}.yaml\ndata ${Buffer.byteLength(body)}\n${body}\n`);
  }
  stream = `commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 5\nbench\n${files.join('')}\n`;
  execFileSync('git', ['--git-dir', gitDir, 'fast-import', '--quiet'], { env: ENV, input: stream, maxBuffer: 1 << 28 });
  execFileSync('git', ['--git-dir', gitDir, 'gc', '--quiet'], { env: ENV });
  return gitDir;
}

/** `git ls-tree -r main` then `git cat-file --batch` of every blob (content read, discarded). */
async function baseline(gitDir: string): Promise<number> {
  const t0 = performance.now();
  const tree = execFileSync('git', ['--git-dir', gitDir, 'ls-tree', '-r', 'main'], { env: ENV, encoding: 'utf8', maxBuffer: 1 << 28 });
  const oids = tree.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[2]);
  await new Promise<void>((resolve, reject) => {
    const p = spawn('git', ['--git-dir', gitDir, 'cat-file', '--batch'], { env: ENV, stdio: ['pipe', 'pipe', 'inherit'] });
    let bytes = 0;
    p.stdout.on('data', (c: Buffer) => (bytes += c.length));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 && bytes > 0 ? resolve() : reject(new Error(`cat-file exited ${code} after ${bytes} bytes`))));
    p.stdin.end(oids.join('\n') + '\n');
  });
  return performance.now() - t0;
}

async function ours(gitDir: string): Promise<{ ms: number; folders: number; files: number }> {
  const t0 = performance.now();
  const r = await scanRepository({ repository: gitDir });
  const ms = performance.now() - t0;
  if (r.files.length !== FILES || !r.folders.every((f) => f.acceptable)) throw new Error(`scan read ${r.files.length} files; refused: ${r.folders.filter((f) => !f.acceptable).map((f) => f.path)}`);
  return { ms, folders: r.folders.length, files: r.files.length };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-analyzer-'));
  try {
    const gitDir = buildRepository(dir);
    // One warm-up of each (JIT, page cache), not recorded.
    await baseline(gitDir);
    const warm = await ours(gitDir);
    const a: number[] = [];
    const b: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        a.push((await ours(gitDir)).ms);
        b.push(await baseline(gitDir));
      } else {
        b.push(await baseline(gitDir));
        a.push((await ours(gitDir)).ms);
      }
    }
    const run = beginRun({ bench: 'analyzer', scenario: 'analyzer.scan', title: `Repository scan of ${FILES.toLocaleString('en-US')} files`, columns: { value: 'analyzer', baseline: 'git ls-tree + cat-file' }, params: { files: FILES, rounds: ROUNDS } });
    run.samples('analyzer ms', a);
    run.samples('git ms', b);
    const s = spread(a);
    const base = baselineSpread(b);
    const ratio = s.value / base.baseline;
    run.row({
      metric: `scanRepository, ${FILES.toLocaleString('en-US')} files, ${warm.folders} folder verdicts`,
      unit: 'ms',
      ...s,
      ...base,
      ratio,
      ratioStyle: 'times',
      target: '≤ 2× git ls-tree -r + cat-file --batch',
      met: ratio <= 2,
    });
    run.write();
    console.log(`analyzer ${s.value.toFixed(0)} ms (${a.map((x) => x.toFixed(0)).join(', ')}), git ${base.baseline.toFixed(0)} ms (${b.map((x) => x.toFixed(0)).join(', ')}): ${ratio.toFixed(2)}×`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
