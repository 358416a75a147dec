// The README's first-run commands work as written: the CLI commands it shows, `serve -h`, and
// stopping `npm start` by killing its pid (nothing is left holding the port).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/net.js';
import { until, withDeadline } from '../support/deadline.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function sh(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { cwd: REPO, timeout: 30_000, killSignal: 'SIGKILL' }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }));
  });
}

test('the README\'s CLI commands run as written; serve -h prints the flags', async () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const commands = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'))
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.startsWith('node dist/src/cli/main.js '));
  assert.deepEqual(commands, ['node dist/src/cli/main.js serve --help', 'node dist/src/cli/main.js version']);
  for (const c of commands) {
    const r = await sh(c);
    assert.equal(r.code, 0, `${c}: ${r.stderr}`);
  }
  for (const flag of ['-h', '--help']) {
    const r = await sh(`node dist/src/cli/main.js serve ${flag}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--secure-port/);
  }
});

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

test('killing the pid of `npm start` stops the server it started', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const npm = spawn('npm', ['start', '--', '--data-dir', dataDir, '--secure-port', String(port), '--log-level', 'warn'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // Whatever happens, nothing of this test outlives it.
  t.after(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  });
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  await until(() => /get gittargets -A/.test(out), `npm start to print its kubectl line (output: ${out})`, 60_000, 50);
  assert.equal(await listening(port), true);
  const exited = new Promise<void>((r) => npm.once('exit', () => r()));
  process.kill(npm.pid!, 'SIGTERM');
  await withDeadline(exited, 'npm start to exit', 15_000);
  await until(async () => !(await listening(port)), `port ${port} to be free after npm start was killed`, 10_000, 100);
});
