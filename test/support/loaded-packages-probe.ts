// Preloaded into a server child process (NODE_OPTIONS=--import=<this file>): when the process
// exits, writes the npm packages its main thread loaded through CommonJS (every package we use
// that matters at start-up is CommonJS, and Node puts a module imported from ESM in the same
// require cache) to the file named by LOADED_PACKAGES_FILE, one a line. See
// test/unit/startup-modules.test.ts.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const out = process.env.LOADED_PACKAGES_FILE;
if (out && isMainThread) {
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () => {
    const pkgs = new Set<string>();
    for (const f of Object.keys(cache)) {
      const m = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f);
      if (m) pkgs.add(m[1]!);
    }
    writeFileSync(out, [...pkgs].sort().join('\n') + '\n');
  });
}
