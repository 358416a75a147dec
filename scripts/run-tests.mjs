#!/usr/bin/env node
// Runs the compiled test suite (dist/test/**/*.test.js) with node's built-in test runner.
// Usage: npm test                 -> every test
//        npm test -- git auth     -> only test files whose path contains "git" or "auth"
//
// Every test file has a deadline: node's --test-timeout, which (with one process per file, the
// runner's default) cancels a file still running after TEST_FILE_TIMEOUT_MS and fails the run, so a
// regression that hangs (a watch that never delivers, a server that never answers) fails CI instead
// of stalling it. Waits inside tests have their own, shorter deadlines (test/support/deadline.ts).
//
// Environment:
//   TEST_CONCURRENCY       test files run at once (default 2)
//   TEST_FILE_TIMEOUT_MS   deadline per test file (default 600000: 10 min; the slowest file takes
//                          about 2 min on a busy 2-core machine)
//   TEST_ROOT              directory to collect *.test.js from (default dist/test); directories
//                          named `fixtures` are skipped (they hold helpers and the runner's own
//                          deliberately hanging fixture)
//   CLUSTER_BUILD_TIMEOUT_MS  deadline for test/cluster/build.sh (default 3600000: 60 min)
//   REVERSER_CI_DEADLINE_MS   set by .ci/run: the epoch time (ms) by which the whole CI run must end
//                          (its 90-minute budget less a margin). The wait for a cold control-plane
//                          build is bounded so that the cluster tests still fit before it. The
//                          control-plane tests are mandatory: a build that fails or is not done by
//                          then fails the run (it is never reported as a pass).
//
// The control-plane tests (files under a `cluster` directory) run last, as a second group: first
// test/cluster/build.sh builds or finds kube-apiserver, kube-controller-manager, etcd and helm (a
// cold build takes many minutes; .ci/run starts it in the background before `npm ci`, and this
// waits for it under its own deadline, so the per-file deadline covers only the tests).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = process.env.TEST_ROOT ?? 'dist/test';
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'fixtures') walk(p);
    } else if (name.endsWith('.test.js')) files.push(p);
  }
})(root);
const filters = process.argv.slice(2);
const selected = files.sort().filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (selected.length === 0) {
  console.error(`no test files matched ${filters.join(' ')}`);
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const fileTimeout = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 600_000);
if (!Number.isInteger(fileTimeout) || fileTimeout <= 0) {
  console.error(`TEST_FILE_TIMEOUT_MS must be a positive integer (milliseconds), got ${process.env.TEST_FILE_TIMEOUT_MS}`);
  process.exit(2);
}
const runFiles = (group) =>
  spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, `--test-timeout=${fileTimeout}`, '--test-reporter=spec', ...group],
    { stdio: 'inherit' },
  ).status ?? 1;
const isCluster = (f) => f.split(/[\\/]/).includes('cluster');
const rest = selected.filter((f) => !isCluster(f));
const cluster = selected.filter(isCluster);
let status = rest.length ? runFiles(rest) : 0;
if (cluster.length) {
  let buildTimeout = Number(process.env.CLUSTER_BUILD_TIMEOUT_MS ?? 3_600_000);
  // The cluster files take a few minutes on a quiet machine; keep room for them on a busy one.
  const CLUSTER_TESTS_BUDGET_MS = 900_000;
  const ciDeadline = Number(process.env.REVERSER_CI_DEADLINE_MS ?? 0);
  let ciBounded = false;
  if (ciDeadline > 0) {
    const left = ciDeadline - Date.now() - CLUSTER_TESTS_BUDGET_MS;
    if (left < buildTimeout) {
      buildTimeout = Math.max(left, 1_000);
      ciBounded = true;
    }
  }
  const t0 = Date.now();
  console.log(`control-plane tests: waiting for test/cluster/build.sh all (deadline ${Math.round(buildTimeout / 1000)} s${ciBounded ? ', bounded by the CI run\'s deadline' : ''})`);
  const b = spawnSync('bash', ['test/cluster/build.sh', 'all'], { stdio: ['ignore', 'inherit', 'inherit'], timeout: buildTimeout });
  const timedOut = b.error?.code === 'ETIMEDOUT' || (b.status === null && b.signal === 'SIGTERM');
  if (timedOut) {
    console.error(
      `control-plane tests: FAILED — the build of kube-apiserver, kube-controller-manager, etcd and helm did not finish within ` +
        `${Math.round(buildTimeout / 1000)} s${ciBounded ? " (bounded by this CI run's deadline)" : ''}; ${cluster.length} control-plane test file(s) could not run. ` +
        `A test that did not run is a failure (docs/contributing.md#control-plane-tests).`,
    );
    status = 1;
  } else if (b.status !== 0) {
    console.error(`control-plane tests: test/cluster/build.sh failed (${b.error ? b.error.message : `exit ${b.status}`}); ${cluster.length} control-plane test file(s) not run: FAILED`);
    status = 1;
  } else {
    console.log(`control-plane tests: binaries ready after ${Math.round((Date.now() - t0) / 1000)} s`);
    const s2 = runFiles(cluster);
    if (status === 0) status = s2;
  }
}
process.exit(status);
