#!/usr/bin/env node
// Builds (tsc + assets + the bundle) and runs one benchmark: `npm run bench -- api [args]`, `npm run bench -- git`.
// `--no-build` skips the build. tsc type errors in files being edited elsewhere do not stop the
// run (tsc still emits); a missing bench entry point does.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const BENCHES = { api: 'dist/bench/api/run.js', git: 'dist/bench/git/run.js', attack: 'dist/bench/attack/run.js', mirror: 'dist/bench/mirror/run.js', snapshot: 'dist/bench/snapshot/run.js', 'list-memory': 'dist/bench/list-memory/run.js', attribution: 'dist/bench/attribution/run.js', authority: 'dist/bench/authority/run.js', backlog: 'dist/bench/backlog/run.js', analyzer: 'dist/bench/analyzer/run.js', scale: 'dist/bench/scale/run.js', replicas: 'dist/bench/replicas/run.js', peer: 'dist/bench/peer/run.js' };
const [name, ...rest] = process.argv.slice(2);
if (!name || !(name in BENCHES)) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [--no-build] [bench arguments]`);
  process.exit(2);
}
const args = rest.filter((a) => a !== '--no-build');
if (!rest.includes('--no-build')) {
  console.error('building (tsc, assets)...');
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (tsc.status !== 0) {
    const out = `${tsc.stdout}${tsc.stderr}`;
    const mine = out.split('\n').filter((l) => l.startsWith(`bench/${name}/`) || l.startsWith('bench/common/'));
    console.error(`tsc reported errors (${out.split('\n').filter((l) => /error TS/.test(l)).length}); continuing with what it emitted`);
    if (mine.length) console.error(mine.join('\n'));
  }
  const assets = spawnSync(process.execPath, ['scripts/copy-assets.mjs'], { stdio: 'inherit' });
  if (assets.status !== 0) process.exit(assets.status ?? 1);
  // The image's entry (Dockerfile), which bench/peer runs.
  const bundle = spawnSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
  if (bundle.status !== 0) process.exit(bundle.status ?? 1);
}
const entry = BENCHES[name];
if (!existsSync(entry)) {
  console.error(`${entry} does not exist: is bench/${name}/run.ts there and did it compile?`);
  process.exit(1);
}
const r = spawnSync(process.execPath, [entry, ...args], { stdio: 'inherit' });
process.exit(r.status ?? 1);
