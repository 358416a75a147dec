#!/usr/bin/env node
// Bundles the compiled server (dist/src, after tsc and copy-assets) into dist/bundle/: the entry the
// container image runs (Dockerfile ENTRYPOINT, package.json bin). Why: node 20 has no compile cache,
// and a server started from dist/src loads ~800 files one by one (our ~400 ES modules, then the
// CommonJS of fastify, ioredis, yaml, semver, prom-client...), each resolved, stat'ed, read and
// compiled on its own: ~750-900 CPU-ms to /readyz, where the bundle takes ~300-370 (load 8, the same
// machine; docs/architecture.md "At rest and at start-up", test/unit/bundle.test.ts).
//
// - Two entries: the CLI and the git worker thread (src/git/worker.ts starts
//   `new URL('./worker-thread.js', import.meta.url)`, which in the bundle is dist/bundle/worker-thread.js).
// - Code split: what is imported lazily (the Redis store, the controllers, `analyze`, the full
//   @kubernetes/client-node) stays a chunk of its own, loaded only when asked for, as before.
// - Packages loaded with createRequire at run time by name (ajv, node-forge, protobufjs, prom-client's
//   files; src/api/validation.ts, src/certs/pki.ts, src/apiserver/openapi/protobuf.ts,
//   src/metrics/prom.ts) are not bundled: they load from node_modules on first use, as before.
// - Files read beside the code (`new URL('./write.lua', import.meta.url)`,
//   './proto/openapiv2.proto') are copied beside the chunks, at the same relative paths.
import { build } from 'esbuild';
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const OUT = 'dist/bundle';
rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: { main: 'dist/src/cli/main.js', 'worker-thread': 'dist/src/git/worker-thread.js' },
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS packages call require() for node's own modules; an ES module has none of its own.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
});
// The assets the bundled code reads relative to itself (see scripts/copy-assets.mjs for dist/src's).
for (const f of readdirSync('dist/src/storage/redis').filter((n) => n.endsWith('.lua'))) cpSync(join('dist/src/storage/redis', f), join(OUT, f));
mkdirSync(join(OUT, 'proto'), { recursive: true });
cpSync('dist/src/apiserver/openapi/proto/openapiv2.proto', join(OUT, 'proto/openapiv2.proto'));
