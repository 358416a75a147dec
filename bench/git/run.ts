// Git engine benchmark: the engine against the git CLI doing the same work in its fastest form,
// measured in the same run, interleaved so machine load hits both alike.
// Run: npx tsc -p tsconfig.json && node dist/bench/git/run.js [--files 10000] [--rounds 15]
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GitEngine } from '../../src/git/index.js';
import { encodeObject } from '../../src/git/manifest-yaml.js';
import { startGitServer } from '../../test/support/git-server.js';
import type { KubeObject } from '../../src/storage/types.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const FILES = arg('files', 10_000);
const ROUNDS = arg('rounds', 15);
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com' };
const gitc = (cwd: string, input: string | undefined, ...a: string[]) => execFileSync('git', a, { cwd, env: ENV, input, encoding: 'utf8', maxBuffer: 1 << 28 }).trim();
// Anything that talks to the Git server must not block: the server runs in this process.
const gitAsync = async (cwd: string, ...a: string[]) => (await promisify(execFile)('git', a, { cwd, env: ENV, maxBuffer: 1 << 28 })).stdout;
const author = { name: 'Bench', email: 'bench@example.com' };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0: number) => performance.now() - t0;
const obj = (i: number, value: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${String(i).padStart(5, '0')}`, namespace: 'bench' }, data: { value, index: String(i) } });
const pathOf = (i: number) => `apps/bench/configmaps/cm-${String(i).padStart(5, '0')}.yaml`;

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'bench-git-'));
  const results: Record<string, number | string> = {};
  const rss0 = process.memoryUsage().rss;
  try {
    const objects = Array.from({ length: FILES }, (_, i) => obj(i, 'v0'));

    // 1. First snapshot of FILES objects as one commit.
    const engine = new GitEngine({ dataDir: join(root, 'engine') });
    let t0 = performance.now();
    const snap = await engine.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: objects.map((o) => ({ op: 'write' as const, object: o, resource: 'configmaps' })), author, message: 'snapshot' });
    const engineSnap = ms(t0);
    if (snap.outcome !== 'Committed') throw new Error('snapshot not committed');
    const engineGitdir = join(root, 'engine', 'git', 'snap.git');

    const work = join(root, 'cli-work');
    mkdirSync(work);
    gitc(work, undefined, 'init', '--quiet', '--initial-branch=main');
    // The CLI gets its file contents ready-made (YAML encoding is not the CLI's work).
    const texts = objects.map(encodeObject);
    t0 = performance.now();
    for (let i = 0; i < FILES; i++) {
      const p = join(work, pathOf(i));
      if (i === 0) mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, texts[i]);
    }
    gitc(work, undefined, 'add', '-A');
    gitc(work, undefined, 'commit', '--quiet', '-m', 'snapshot');
    const cliSnap = ms(t0);
    const sameTree = gitc(work, undefined, 'rev-parse', 'HEAD^{tree}') === gitc(engineGitdir, undefined, 'rev-parse', 'main^{tree}');
    results.snapshotEngineMs = engineSnap;
    results.snapshotCliMs = cliSnap;
    results.snapshotSameTree = String(sameTree);

    // 2. One-object change in the FILES-file folder; the engine warmed by one commit, the CLI with its index.
    await engine.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(1, 'warm') }], author, message: 'warm' });
    writeFileSync(join(work, pathOf(1)), encodeObject(obj(1, 'warm')));
    gitc(work, undefined, 'commit', '--quiet', '-am', 'warm');
    const eng: number[] = [];
    const cli: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const i = (r * 7919) % FILES;
      t0 = performance.now();
      const c = await engine.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(i, `e${r}`) }], author, message: `change ${r}` });
      eng.push(ms(t0));
      if (c.outcome !== 'Committed') throw new Error('change not committed');
      t0 = performance.now();
      const blob = gitc(work, encodeObject(obj(i, `e${r}`)), 'hash-object', '-w', '--stdin');
      gitc(work, undefined, 'update-index', '--cacheinfo', `100644,${blob},${pathOf(i)}`);
      const tree = gitc(work, undefined, 'write-tree');
      const commit = gitc(work, undefined, 'commit-tree', tree, '-p', 'HEAD', '-m', `change ${r}`);
      gitc(work, undefined, 'update-ref', 'refs/heads/main', commit);
      cli.push(ms(t0));
    }
    results.changeEngineMs = median(eng);
    results.changeCliMs = median(cli);
    results.changeSameTree = String(gitc(work, undefined, 'rev-parse', 'HEAD^{tree}') === gitc(engineGitdir, undefined, 'rev-parse', 'main^{tree}'));

    // A restarted engine rebuilds its identity index from the persisted identity log.
    const cold = new GitEngine({ dataDir: join(root, 'engine') });
    t0 = performance.now();
    await cold.commit({ repository: { url: 'local:snap' }, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(3, 'cold') }], author, message: 'cold' });
    results.changeColdEngineMs = ms(t0);
    results.rssGrowthMB = (process.memoryUsage().rss - rss0) / 1e6;
    results.peakRssMB = process.resourceUsage().maxRSS / 1e3;

    // 3. Push one new commit to git http-backend: engine.commit (discover, build, push) against `git push`.
    const server = await startGitServer();
    try {
      for (const name of ['engine', 'cli']) {
        server.createBareRepo(name);
        await gitAsync(work, 'push', '--quiet', server.authURL(name), 'HEAD:refs/heads/main');
      }
      const clone = join(root, 'cli-clone');
      await gitAsync(root, 'clone', '--quiet', server.authURL('cli'), clone);
      const pushEngine = new GitEngine({ dataDir: join(root, 'push-engine') });
      const repository = { url: server.url('engine'), credentials: { username: server.username, password: server.password } };
      await pushEngine.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(2, 'warm') }], author, message: 'warm' });
      const pe: number[] = [];
      const pc: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const i = (r * 104729) % FILES;
        t0 = performance.now();
        await pushEngine.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(i, `p${r}`) }], author, message: `push ${r}` });
        pe.push(ms(t0));
        writeFileSync(join(clone, pathOf(i)), encodeObject(obj(i, `p${r}`)));
        gitc(clone, undefined, 'commit', '--quiet', '-am', `push ${r}`);
        t0 = performance.now();
        await gitAsync(clone, 'push', '--quiet', 'origin', 'HEAD:main');
        pc.push(ms(t0));
      }
      results.pushEngineMs = median(pe);
      results.pushCliMs = median(pc);
    } finally {
      await server.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  const r = results as Record<string, number>;
  const rows: Array<[string, number, number, number, string]> = [
    [`one-object change in a ${FILES}-file folder`, r.changeEngineMs, r.changeCliMs, 0.5, 'hash-object -w, update-index --cacheinfo, write-tree, commit-tree, update-ref'],
    [`first snapshot of ${FILES} objects`, r.snapshotEngineMs, r.snapshotCliMs, 2, 'write files, add -A, commit'],
    ['push one new commit (http-backend)', r.pushEngineMs, r.pushCliMs, 2, 'git push (engine: whole commit incl. remote check)'],
  ];
  console.log(`| scenario | engine | git CLI | ratio | target | met |`);
  console.log(`|---|---:|---:|---:|---:|---|`);
  for (const [name, e, c, target, how] of rows) {
    console.log(`| ${name} | ${e.toFixed(1)} ms | ${c.toFixed(1)} ms (${how}) | ${(e / c).toFixed(2)}× | ≤ ${target}× | ${e / c <= target ? 'yes' : 'NO'} |`);
  }
  console.log(`| RSS growth, ${FILES}-file repository | ${r.rssGrowthMB.toFixed(0)} MB (peak RSS ${r.peakRssMB.toFixed(0)} MB) | | | ≤ 200 MB | ${r.rssGrowthMB <= 200 ? 'yes' : 'NO'} |`);
  console.log(`\nsame tree as the CLI: snapshot ${results.snapshotSameTree}, after the changes ${results.changeSameTree}; restarted engine's first one-object commit: ${r.changeColdEngineMs.toFixed(0)} ms`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
