// The README's first-run section, run as written: the server is started with `npm start`'s command
// line (read from package.json, plus a free port), the ```sh blocks between the README's
// first-run markers run in order in one bash in a fresh directory (with `reverser-apiserver` on
// PATH), and what they print ends with the README's ```text block: alice's and bob's commits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/net.js';
import { waitMs, withDeadline } from '../support/deadline.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

/** The README's runnable first-run section: its shell blocks and its expected output. */
function firstRun(): { script: string; expected: string } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const begin = readme.indexOf('<!-- first-run:begin -->');
  const end = readme.indexOf('<!-- first-run:end -->');
  assert.ok(begin >= 0 && end > begin, 'README.md has the first-run markers');
  const section = readme.slice(begin, end);
  const blocks = [...section.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
  const script = blocks.filter((b) => b.lang === 'sh').map((b) => b.body).join('\n');
  const texts = blocks.filter((b) => b.lang === 'text');
  assert.equal(texts.length, 1, 'one expected-output block');
  return { script, expected: texts[0]!.body };
}

test("the README's first run: two people edit, git log names both", { timeout: 240_000 }, async (t) => {
  const { script, expected } = firstRun();
  const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string;
  const prefix = 'exec node dist/src/cli/main.js ';
  assert.ok(start.startsWith(prefix), start);
  const dir = mkdtempSync(join(tmpdir(), 'readme-first-run-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'reverser-apiserver'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
  chmodSync(join(bin, 'reverser-apiserver'), 0o755);
  const work = join(dir, 'work');
  mkdirSync(work);

  // `npm start`, in the working directory (data dir ./.reverser), on a free port.
  const port = await freePort();
  const server = spawn(process.execPath, [MAIN, ...start.slice(prefix.length).split(' '), '--secure-port', String(port), '--log-level', 'warn'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  server.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<void>((r) => server.once('exit', () => r()));
  t.after(async () => {
    server.kill('SIGTERM');
    await withDeadline(exited, 'the server to exit', 15_000, () => server.kill('SIGKILL'));
  });
  await withDeadline(new Promise<void>((resolve) => server.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    if (out.includes('kubectl --kubeconfig .reverser/admin.kubeconfig get gittargets -A\n')) resolve();
  })), `the server's kubectl line (stderr: ${err})`, 60_000);

  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: work,
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: dir },
      timeout: waitMs(120_000),
      killSignal: 'SIGKILL',
    }, (e, stdout, stderr) => resolve({ code: e ? (typeof (e as { code?: unknown }).code === 'number' ? (e as { code: number }).code : -1) : 0, stdout, stderr }));
  });
  assert.equal(r.code, 0, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}\nserver:\n${err}`);
  assert.ok(r.stdout.endsWith(expected), `expected the output to end with:\n${expected}\ngot:\n${r.stdout}`);
});
