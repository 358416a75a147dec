// scripts/check-prereqs.sh (run by .ci/run) finds kubectl 1.27 and 1.33 beside kubectl and, when
// they are missing, says so and where they come from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
  assert.match(ok.stdout, /^prerequisites: ok \(kubectl 1\.27 and 1\.33 in \/\S+\)\n$/);

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
