// The engine's RSS growth on a FILES-file repository, in a process of its own (bench/git/run.ts
// spawns it): the bench process also holds what its git CLI baselines need (the pre-rendered tree
// and fast-import's stream of it, clones), which is not the engine's memory. The same work as the
// bench's engine side: SNAPSHOTS snapshots of FILES objects as one commit, each by a fresh engine
// into a fresh repository (earlier engines left to the GC), CHANGES one-object changes on the last,
// and a restarted engine's first commit (it reads the persisted identity index back).
// Prints one JSON line: { growthMB, peakMB, baseMB }.
// Run: node dist/bench/git/rss.js --files 10000 --snapshots 6 --changes 16
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine } from '../../src/git/index.js';
import type { KubeObject } from '../../src/storage/types.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const FILES = arg('files', 10_000);
const SNAPSHOTS = arg('snapshots', 6);
const CHANGES = arg('changes', 16);
const author = { name: 'Bench', email: 'bench@example.com' };
const obj = (i: number, value: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${String(i).padStart(5, '0')}`, namespace: 'bench' }, data: { value, index: String(i) } });

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'bench-git-rss-'));
  const rss0 = process.memoryUsage().rss;
  try {
    // The objects are the engine's input, as the server's store holds them: counted.
    const objects = Array.from({ length: FILES }, (_, i) => obj(i, 'v0'));
    const repository = { url: 'local:snap' };
    let engine: GitEngine | undefined;
    let dataDir = '';
    for (let r = 0; r < SNAPSHOTS; r++) {
      dataDir = join(root, `engine-${r}`);
      engine = new GitEngine({ allowInsecureCredentials: true, dataDir });
      const c = await engine.commit({ repository, branch: 'main', folder: 'apps', changes: objects.map((o) => ({ op: 'write' as const, object: o, resource: 'configmaps' })), author, message: 'snapshot' });
      if (c.outcome !== 'Committed') throw new Error(`snapshot ${r}: ${c.outcome}`);
    }
    for (let r = 0; r < CHANGES; r++) {
      const c = await engine!.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj((r * 7919) % FILES, `e${r}`) }], author, message: `change ${r}` });
      if (c.outcome !== 'Committed') throw new Error(`change ${r}: ${c.outcome}`);
    }
    const cold = new GitEngine({ allowInsecureCredentials: true, dataDir });
    const c = await cold.commit({ repository, branch: 'main', folder: 'apps', changes: [{ op: 'write', object: obj(3, 'cold') }], author, message: 'cold' });
    if (c.outcome !== 'Committed') throw new Error(`restarted engine: ${c.outcome}`);
    const growthMB = (process.memoryUsage().rss - rss0) / 1e6;
    console.log(JSON.stringify({ growthMB, peakMB: process.resourceUsage().maxRSS / 1e3, baseMB: rss0 / 1e6 }));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
