// The bundle the container image runs (dist/bundle/main.js, written by scripts/bundle.mjs; the
// Dockerfile's ENTRYPOINT and package.json's bin): it serves what the tsc output serves, through
// the paths where a bundle differs from dist/src: files read beside the code (the Redis Lua
// scripts, the OpenAPI .proto, package.json for /version), packages loaded by name on first use
// (ajv for the first write's validation, protobufjs), and the git worker thread started from its
// own entry (a GitTarget's snapshot committed and read back with the git CLI). And it starts with
// well under the CPU of the tsc output: node 20 loads the ~800 files of dist/src one by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { BUNDLE_MAIN, ns, startServer } from '../support/server.js';
import { until } from '../support/deadline.js';

const PACKAGE_VERSION = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version as string;

test('the bundle serves: /version from package.json, a write (ajv), a GitTarget mirrored on Redis (Lua) and committed by the worker thread, OpenAPI as protobuf', { timeout: 180_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const s = await startServer(['--storage=redis', '--redis-url', redis.url, '--sandbox', '--controllers=all'], { main: BUNDLE_MAIN });
  t.after(() => s.stop());

  const version = await s.get('/version');
  assert.equal(version.status, 200, version.text);
  assert.equal(version.body.gitVersion, `v1.33.0+reverser-apiserver-v${PACKAGE_VERSION}`);

  const created = async (path: string, body: unknown) => {
    const r = await s.request('POST', path, { body });
    assert.equal(r.status, 201, `${path}: ${r.text}`);
  };
  await created('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bundled' } });
  await created('/api/v1/namespaces/bundled/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'bundled' }, data: { k: 'v' } });
  // A bad GitTarget is refused by the schema validation (ajv, loaded on this first validation).
  const bad = await s.request('POST', ns('bundled'), { body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'bad', namespace: 'bundled' }, spec: { branch: 'main' } } });
  assert.equal(bad.status, 422, bad.text);
  assert.equal(bad.body.reason, 'Invalid');
  await created(ns('bundled'), {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'mirror', namespace: 'bundled' },
    spec: { repository: { url: 'local:bundled' }, branch: 'main', path: 'live', resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['bundled'] }], commit: { idleSeconds: 1 } },
  });
  await until(
    async () => {
      const o = (await s.get(`${ns('bundled')}/mirror`)).body;
      return o?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') && o?.status?.lastCommit?.sha !== undefined;
    },
    'the GitTarget Ready with its snapshot committed',
    120_000,
  );
  const repo = join(s.dataDir, 'git', 'bundled', 'bundled.git');
  const git = (...args: string[]) => execFileSync('git', ['--git-dir', repo, ...args], { encoding: 'utf8' });
  assert.equal(git('log', '--format=%s', 'main'), 'Snapshot of bundled/mirror: 1 object\n');
  assert.equal(git('show', 'main:live/bundled/configmaps/app.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: bundled\ndata:\n  k: v\n');

  const proto = await s.get('/openapi/v2', { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
  assert.equal(proto.status, 200, proto.text.slice(0, 300));
  assert.match(String(proto.headers['content-type']), /protobuf/);
});

/** CPU (ms, every thread, from the scheduler's accounting) a server process has used so far. */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of execFileSync('ls', [`/proc/${pid}/task`], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1e6;
}

test('the bundle starts with under 0.75x the CPU of the tsc output (median of 3 starts each, alternated)', { timeout: 180_000 }, async (t) => {
  // One data directory for every start: the first writes the dev PKI (node-forge's key generation,
  // the same work either way), the measured ones find it, as a deployment's restarts do.
  const dataDir = mkdtempSync(join(tmpdir(), 'bundle-start-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const startCpu = async (main?: string) => {
    const s = await startServer([], { main, dataDir });
    try {
      await until(async () => (await s.get('/readyz')).status === 200, '/readyz 200', 30_000);
      return cpuMs(s.pid);
    } finally {
      await s.stop();
    }
  };
  await startCpu(BUNDLE_MAIN);
  const bundled: number[] = [];
  const unbundled: number[] = [];
  for (let i = 0; i < 3; i++) {
    // Alternated, so that the machine's load drifting hits both alike.
    if (i % 2 === 0) {
      bundled.push(await startCpu(BUNDLE_MAIN));
      unbundled.push(await startCpu());
    } else {
      unbundled.push(await startCpu());
      bundled.push(await startCpu(BUNDLE_MAIN));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
  const ratio = median(bundled) / median(unbundled);
  t.diagnostic(`CPU-ms to /readyz: bundle ${bundled.map(Math.round).join('/')}, tsc output ${unbundled.map(Math.round).join('/')}: ratio ${ratio.toFixed(2)}`);
  assert.ok(ratio < 0.75, `CPU-ms to /readyz: bundle ${bundled.map(Math.round).join('/')}, tsc output ${unbundled.map(Math.round).join('/')}: ratio ${ratio.toFixed(2)}`);
});
