// scripts/check-prereqs.sh (run by .ci/run) finds kubectl 1.27 and 1.33 beside kubectl and, when
// they are missing, says so and where they come from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubectlOnPath } from '../support/kubectl.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function check(path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['scripts/check-prereqs.sh'], { cwd: REPO, timeout: 30_000, env: { ...process.env, PATH: path } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }));
  });
}

test('check-prereqs: passes here, and names kubectl.1.27 and where it comes from when a kubectl has no siblings', async (t) => {
  const ok = await check(process.env.PATH ?? '');
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^prerequisites: ok \(kubectl 1\.27 and 1\.33 in \/\S+, go1\.\d+(\.\d+)?\)\n$/);

  // A PATH whose kubectl is a lone binary (linked into an empty directory, found first).
  const dir = mkdtempSync(join(tmpdir(), 'lone-kubectl-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lone = join(dir, 'bin');
  mkdirSync(lone);
  copyFileSync(kubectlOnPath(), join(lone, 'kubectl'));
  const r = await check(`${lone}:${process.env.PATH}`);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`^prerequisites: ${lone}/kubectl\\.1\\.27 not found: the kubectl end-to-end tests need kubectl 1\\.27 beside kubectl\\.\\n`));
  assert.match(r.stderr, /Google Cloud CLI's Debian package 'kubectl'/);
});

test('check-prereqs: Go older than 1.26 is named as missing (the control-plane tests build kube-apiserver with it)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'old-go-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A `go` found first on PATH that reports an older release (a stand-in for an old toolchain).
  writeFileSync(join(dir, 'go'), '#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo go1.25.3 && exit 0\nexit 1\n');
  chmodSync(join(dir, 'go'), 0o755);
  const r = await check(`${dir}:${process.env.PATH}`);
  assert.equal(r.code, 1, r.stdout);
  assert.equal(r.stderr, `prerequisites: Go >= 1.26 is required for the control-plane tests, have go1.25.3 (${dir}/go)\n`);
});

test('certs/generate.mjs --help prints its usage (no stack trace); a bad flag exits 2 with the usage', async () => {
  const run = (args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, ['certs/generate.mjs', ...args], { cwd: REPO, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }));
  });
  const help = await run(['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.equal(help.stderr, '');
  assert.match(help.stdout, /^Usage: node certs\/generate\.mjs \[--out DIR\] \[--service NAME\] \[--namespace NS\] \[--days N\]\n/);
  assert.equal((await run(['-h'])).stdout, help.stdout);
  const bad = await run(['--bogus']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^certs\/generate\.mjs: Unknown option '--bogus'/);
  assert.ok(bad.stderr.endsWith(`\n\n${help.stdout}`), bad.stderr);
  assert.doesNotMatch(bad.stderr, /^\s+at /m);
});
