// Git engine benchmark: the engine against the git CLI doing the same work in its fastest form,
// measured in the same run, interleaved (A/B, B/A, …) so machine load hits both alike, each
// scenario several times; medians and ranges are reported and written to bench/results/.
// Run: npm run bench -- git [--files 10000] [--rounds 15] [--snapshot-rounds 5]
//
// Baselines:
// - snapshot: `git fast-import` of the identical, pre-rendered tree from an in-memory stream into a
//   fresh bare repository (the fastest way git itself builds a 10,000-file commit: one pack, no
//   work tree, no index). The engine's time includes encoding the objects as YAML; the baseline
//   gets the bytes ready-made. Both trees must hash the same, every round.
// - one-object change: plumbing with the index already populated (hash-object -w, update-index
//   --cacheinfo, write-tree, commit-tree, update-ref).
// - push: `git push` of an already-made one-file commit to the same `git http-backend`.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine } from '../../src/git/index.js';
import { encodeObject } from '../../src/git/manifest-yaml.js';
import { startGitServer } from '../../test/support/git-server.js';
import type { KubeObject } from '../../src/storage/types.js';
import { baselineSpread, beginRun, spread } from '../common/results.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const FILES = arg('files', 10_000);
const NF = FILES.toLocaleString('en-US');
const ROUNDS = arg('rounds', 15);
const SNAPSHOT_ROUNDS = arg('snapshot-rounds', 5);
if (SNAPSHOT_ROUNDS < 3) throw new Error('--snapshot-rounds must be at least 3 (median and range)');
const PARAMS = { files: FILES, rounds: ROUNDS, snapshotRounds: SNAPSHOT_ROUNDS };
const COLUMNS = { value: 'engine', baseline: 'git CLI' };
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com' };
const gitc = (cwd: string, input: string | Buffer | undefined, ...a: string[]) => execFileSync('git', a, { cwd, env: ENV, input, encoding: 'utf8', maxBuffer: 1 << 28 }).trim();
// Anything that talks to the Git server must not block: the server runs in this process.
const gitAsync = async (cwd: string, ...a: string[]) => (await promisify(execFile)('git', a, { cwd, env: ENV, maxBuffer: 1 << 28 })).stdout;
const author = { name: 'Bench', email: 'bench@example.com' };
const ms = (t0: number) => performance.now() - t0;
const f1 = (x: number) => x.toFixed(1);
const obj = (i: number, value: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${String(i).padStart(5, '0')}`, namespace: 'bench' }, data: { value, index: String(i) } });
const roundDir = (kind: string, r: number) => `${kind}-${r < 0 ? 'warm' : r}`;
const pathOf = (i: number) => `apps/bench/configmaps/cm-${String(i).padStart(5, '0')}.yaml`;

/** Runs `a` and `b` `rounds` times, alternating which goes first. */
async function interleaved(rounds: number, a: (r: number) => Promise<number>, b: (r: number) => Promise<number>): Promise<{ a: number[]; b: number[] }> {
  const out = { a: [] as number[], b: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      out.a.push(await a(r));
      out.b.push(await b(r));
    } else {
      out.b.push(await b(r));
      out.a.push(await a(r));
    }
  }
  return out;
}

/** `git fast-import` of `stream` into `gitDir` (created bare first, not timed); resolves with its wall time. */
async function fastImport(gitDir: string, stream: Buffer): Promise<number> {
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitDir], { env: ENV });
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = execFile('git', ['--git-dir', gitDir, 'fast-import', '--quiet'], { env: ENV }, (e) => (e ? reject(e) : resolve()));
    p.stdin!.end(stream);
  });
  return ms(t0);
}

function line(name: string, e: number[], c: number[]): void {
  const se = spread(e);
  const sc = spread(c);
  console.log(`${name}: engine ${f1(se.value)} ms (${f1(se.valueRange![0])}–${f1(se.valueRange![1])}), git ${f1(sc.value)} ms (${f1(sc.valueRange![0])}–${f1(sc.valueRange![1])}), ratio ${(se.value / sc.value).toFixed(2)}×`);
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'bench-git-'));
  const rss0 = process.memoryUsage().rss;
  try {
    const objects = Array.from({ length: FILES }, (_, i) => obj(i, 'v0'));

    // 1. First snapshot of FILES objects as one commit: engine vs git fast-import of the same tree.
    const snapRun = beginRun({ bench: 'git', scenario: 'git.snapshot', title: 'first snapshot', columns: COLUMNS, order: 2, params: PARAMS });
    const texts = objects.map(encodeObject);
    const stream = Buffer.concat([
      Buffer.from('commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 8\nsnapshot\n'),
      ...texts.map((t, i) => Buffer.from(`M 100644 inline ${pathOf(i)}\ndata ${Buffer.byteLength(t)}\n${t}\n`)),
    ]);
    let engine: GitEngine | undefined;
    let engineGitdir = '';
    const trees: string[] = [];
    const engineSnapshot = async (r: number) => {
      const dataDir = join(root, roundDir('engine', r));
      const e = new GitEngine({ allowInsecureCredentials: true,  dataDir });
      const t0 = performance.now();
      const snap = await e.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: objects.map((o) => ({ op: 'write' as const, object: o, resource: 'configmaps' })), author, message: 'snapshot' });
      const t = ms(t0);
      if (snap.outcome !== 'Committed') throw new Error(`snapshot round ${r}: ${snap.outcome}`);
      engine = e;
      engineGitdir = join(dataDir, 'git', 'snap.git');
      trees.push(gitc(engineGitdir, undefined, 'rev-parse', 'main^{tree}'));
      return t;
    };
    const cliSnapshot = async (r: number) => {
      const dir = join(root, `${roundDir('fast-import', r)}.git`);
      const t = await fastImport(dir, stream);
      trees.push(gitc(dir, undefined, 'rev-parse', 'main^{tree}'));
      return t;
    };
    // One untimed round of each first: module loading and JIT warm-up are not the snapshot's cost.
    const warm = [await engineSnapshot(-1), await cliSnapshot(-1)];
    const snap = await interleaved(SNAPSHOT_ROUNDS, engineSnapshot, cliSnapshot);
    if (new Set(trees).size !== 1) throw new Error(`engine and git fast-import built different trees: ${[...new Set(trees)].join(', ')}`);
    const treeOid = trees[0]!;
    console.log(`snapshot of ${FILES}: both sides built tree ${treeOid} in every round (${trees.length} trees compared)`);
    line(`first snapshot of ${FILES} (median of ${SNAPSHOT_ROUNDS}, warm-up ${f1(warm[0]!)} / ${f1(warm[1]!)} ms not counted)`, snap.a, snap.b);
    snapRun.samples('engine ms', snap.a);
    snapRun.samples('git fast-import ms', snap.b);
    snapRun.samples('warm-up (not counted): engine ms, git fast-import ms', warm);
    const ss = spread(snap.a);
    const sb = baselineSpread(snap.b);
    snapRun.row({
      metric: `first snapshot of ${NF} objects as one commit`,
      unit: 'ms',
      ...ss,
      ...sb,
      ratio: ss.value / sb.baseline,
      ratioStyle: 'times',
      target: '≤ 2× git fast-import',
      met: ss.value <= 2 * sb.baseline,
      notes: `baseline \`git fast-import\` of the identical pre-rendered tree (engine time includes YAML encoding); same tree ${treeOid.slice(0, 12)} on both sides in every round; interleaved after one warm-up round each`,
    });
    snapRun.write();

    // 2. One-object change in the FILES-file folder; the engine warmed by one commit, the CLI with its index.
    const changeRun = beginRun({ bench: 'git', scenario: 'git.change', title: 'one-object change', columns: COLUMNS, order: 1, params: PARAMS });
    const work = join(root, 'cli-work');
    // The CLI's work tree and index, from the fast-import repository (setup, not timed).
    gitc(root, undefined, 'clone', '--quiet', join(root, 'fast-import-warm.git'), work);
    await engine!.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(1, 'warm') }], author, message: 'warm' });
    writeFileSync(join(work, pathOf(1)), encodeObject(obj(1, 'warm')));
    gitc(work, undefined, 'commit', '--quiet', '-am', 'warm');
    const idx = (r: number) => (r * 7919) % FILES;
    const change = await interleaved(
      ROUNDS,
      async (r) => {
        const t0 = performance.now();
        const c = await engine!.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(idx(r), `e${r}`) }], author, message: `change ${r}` });
        const t = ms(t0);
        if (c.outcome !== 'Committed') throw new Error('change not committed');
        return t;
      },
      async (r) => {
        const t0 = performance.now();
        const blob = gitc(work, encodeObject(obj(idx(r), `e${r}`)), 'hash-object', '-w', '--stdin');
        gitc(work, undefined, 'update-index', '--cacheinfo', `100644,${blob},${pathOf(idx(r))}`);
        const tree = gitc(work, undefined, 'write-tree');
        const commit = gitc(work, undefined, 'commit-tree', tree, '-p', 'HEAD', '-m', `change ${r}`);
        gitc(work, undefined, 'update-ref', 'refs/heads/main', commit);
        return ms(t0);
      },
    );
    const changeTreeCli = gitc(work, undefined, 'rev-parse', 'HEAD^{tree}');
    const changeTreeEngine = gitc(engineGitdir, undefined, 'rev-parse', 'main^{tree}');
    if (changeTreeCli !== changeTreeEngine) throw new Error(`after the changes the trees differ: engine ${changeTreeEngine}, CLI ${changeTreeCli}`);
    line(`one-object change in a ${FILES}-file folder (median of ${ROUNDS})`, change.a, change.b);

    // A restarted engine rebuilds its identity index from the persisted identity log.
    const cold = new GitEngine({ allowInsecureCredentials: true,  dataDir: join(engineGitdir, '..', '..') });
    let t0 = performance.now();
    await cold.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(3, 'cold') }], author, message: 'cold' });
    const coldMs = ms(t0);
    const sc = spread(change.a);
    const bc = baselineSpread(change.b);
    changeRun.samples('engine ms', change.a);
    changeRun.samples('git plumbing ms', change.b);
    changeRun.samples("restarted engine's first commit ms", [coldMs]);
    changeRun.row({
      metric: `one-object change in a ${NF}-file folder`,
      unit: 'ms',
      ...sc,
      ...bc,
      ratio: sc.value / bc.baseline,
      ratioStyle: 'times',
      target: '≤ 0.5× git CLI',
      met: sc.value <= 0.5 * bc.baseline,
      notes: `baseline: hash-object -w, update-index --cacheinfo, write-tree, commit-tree, update-ref with the index populated; same tree after the changes; restarted engine's first commit ${f1(coldMs)} ms`,
    });
    changeRun.write();

    // The engine's RSS growth in a process of its own (rss.ts): this one also holds the baselines'
    // pre-rendered tree, fast-import's stream of it and the CLI's clones. Its own growth is noted.
    const rssRun = beginRun({ bench: 'git', scenario: 'git.rss', title: 'RSS growth', columns: COLUMNS, order: 4, params: PARAMS });
    const here = (process.memoryUsage().rss - rss0) / 1e6;
    // Three such processes: how much of the earlier engines' garbage is still held varies by tens of MB.
    const children = Array.from({ length: 3 }, () => JSON.parse(execFileSync(process.execPath, [join(import.meta.dirname, 'rss.js'), '--files', String(FILES), '--snapshots', String(SNAPSHOT_ROUNDS + 1), '--changes', String(ROUNDS + 1)], { encoding: 'utf8', maxBuffer: 1 << 20 }).trim()) as { growthMB: number; peakMB: number });
    const g = spread(children.map((c) => c.growthMB));
    const peak = Math.max(...children.map((c) => c.peakMB));
    rssRun.samples('RSS growth MB (the engine alone, bench/git/rss.ts, 3 processes)', children.map((c) => c.growthMB));
    rssRun.samples('peak RSS MB (the same processes)', children.map((c) => c.peakMB));
    rssRun.samples('RSS growth MB of this process (engine and baselines)', [here]);
    rssRun.row({ metric: `RSS growth, ${NF}-file repository`, unit: 'MB', ...g, target: '≤ 200 MB', met: g.value <= 200, notes: `3 processes of their own, each of which made ${SNAPSHOT_ROUNDS + 1} engine snapshots (earlier engines left to the GC), ${ROUNDS + 1} changes and a restarted engine's first commit; peak RSS ${peak.toFixed(0)} MB; this bench's process, which also holds the baselines' tree and stream, grew ${here.toFixed(0)} MB` });
    console.log(`RSS growth ${g.value.toFixed(0)} MB (${children.map((c) => c.growthMB.toFixed(0)).join('/')}; peak RSS ${peak.toFixed(0)} MB); this process ${here.toFixed(0)} MB`);
    rssRun.write();

    // 3. Push one new commit to git http-backend: engine.commit (discover, build, push) against `git push`.
    const pushRun = beginRun({ bench: 'git', scenario: 'git.push', title: 'push', columns: COLUMNS, order: 3, params: PARAMS });
    const server = await startGitServer();
    try {
      for (const name of ['engine', 'cli']) {
        server.createBareRepo(name);
        await gitAsync(work, 'push', '--quiet', server.authURL(name), 'HEAD:refs/heads/main');
      }
      const clone = join(root, 'cli-clone');
      await gitAsync(root, 'clone', '--quiet', server.authURL('cli'), clone);
      const pushEngine = new GitEngine({ allowInsecureCredentials: true,  dataDir: join(root, 'push-engine') });
      const repository = { url: server.url('engine'), credentials: { username: server.username, password: server.password } };
      await pushEngine.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(2, 'warm') }], author, message: 'warm' });
      const pidx = (r: number) => (r * 104729) % FILES;
      const push = await interleaved(
        ROUNDS,
        async (r) => {
          t0 = performance.now();
          const c = await pushEngine.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(pidx(r), `p${r}`) }], author, message: `push ${r}` });
          const t = ms(t0);
          if (c.outcome !== 'Committed') throw new Error(`push round ${r}: ${c.outcome}`);
          return t;
        },
        async (r) => {
          writeFileSync(join(clone, pathOf(pidx(r))), encodeObject(obj(pidx(r), `p${r}`)));
          gitc(clone, undefined, 'commit', '--quiet', '-am', `push ${r}`);
          t0 = performance.now();
          await gitAsync(clone, 'push', '--quiet', 'origin', 'HEAD:main');
          return ms(t0);
        },
      );
      line(`push one new commit (median of ${ROUNDS})`, push.a, push.b);
      const sp = spread(push.a);
      const bp = baselineSpread(push.b);
      pushRun.samples('engine ms', push.a);
      pushRun.samples('git push ms', push.b);
      pushRun.row({
        metric: 'push one new commit to git http-backend',
        unit: 'ms',
        ...sp,
        ...bp,
        ratio: sp.value / bp.baseline,
        ratioStyle: 'times',
        target: '≤ 2× git CLI',
        met: sp.value <= 2 * bp.baseline,
        notes: 'engine: a whole commit (remote discovery, build, push); baseline: `git push` of an already-made commit',
      });
      pushRun.write();
    } finally {
      await server.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
