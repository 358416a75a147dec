// What a started server has loaded when /readyz first answers: only what serving needs. fastify's
// own schema compilers (ajv through @fastify/ajv-compiler, ajv-formats through
// @fastify/fast-json-stringify-compiler) are not loaded, since no route declares a fastify schema
// (NO_ROUTE_SCHEMAS, src/apiserver/connections.ts); ajv is loaded by our own validation on the
// first write (src/api/validation.ts). prom-client's index is not loaded either, so neither is the
// @opentelemetry/api it requires (src/metrics/prom.ts). The packages are read from the real server process by a
// preloaded probe (test/support/loaded-packages-probe.ts) written when it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitTarget, ns, startServer } from '../support/server.js';

const PROBE = fileURLToPath(new URL('../support/loaded-packages-probe.js', import.meta.url));

/** Starts a server, runs `work` against it, stops it, and answers the packages it had loaded. */
async function packagesLoaded(work: (s: Awaited<ReturnType<typeof startServer>>) => Promise<void>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'startup-modules-'));
  const file = join(dir, 'packages.txt');
  try {
    // --schema-compile-delay=0s: the schemas are compiled at the first write, never by the timer
    // (src/server/run.ts), so what is loaded does not depend on how long the test takes.
    const s = await startServer(['--schema-compile-delay=0s'], { env: { NODE_OPTIONS: `--import=${PROBE}`, LOADED_PACKAGES_FILE: file } });
    try {
      await work(s);
    } finally {
      await s.stop();
    }
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const FASTIFY_COMPILERS = ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler'];

test('a ready server has not loaded ajv, fastify\'s schema compilers or @opentelemetry/api; the first write loads ajv, never fastify\'s compilers', async () => {
  const atReady = await packagesLoaded(async (s) => {
    const r = await s.get('/readyz');
    assert.equal(r.status, 200, r.text);
    const list = await s.get(ns('default'));
    assert.equal(list.status, 200, list.text);
  });
  assert.ok(atReady.includes('fastify') && atReady.includes('prom-client'), `the probe sees the server's packages: ${atReady.join(' ')}`);
  for (const p of ['ajv', 'ajv-formats', '@opentelemetry/api', ...FASTIFY_COMPILERS]) assert.ok(!atReady.includes(p), `${p} is not loaded before a request needs it: ${atReady.join(' ')}`);

  const afterWrite = await packagesLoaded(async (s) => {
    const r = await s.request('POST', ns('default'), { body: gitTarget('lazy-ajv') });
    assert.equal(r.status, 201, r.text);
  });
  assert.ok(afterWrite.includes('ajv'), `the first write's validation loads ajv: ${afterWrite.join(' ')}`);
  for (const p of FASTIFY_COMPILERS) assert.ok(!afterWrite.includes(p), `${p} is never loaded: ${afterWrite.join(' ')}`);
});
