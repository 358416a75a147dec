// Two servers on one --data-dir handed out the same resourceVersions and the
// second rewrote admin.kubeconfig. The directory is locked before anything is written into it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.js';
import { fileURLToPath } from 'node:url';
import { MAIN, serveUntilExit } from './serve-process.js';
import { freePort } from '../support/net.js';
import { until, withDeadline } from '../support/deadline.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const LOCK = 'reverser-apiserver.lock';

function readLock(dir: string): { pid: number; host: string; since: string } {
  return JSON.parse(readFileSync(join(dir, LOCK), 'utf8'));
}

test('a second server on the same data directory exits 2 naming the holder, and writes nothing', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startServer(['--data-dir', dir, `--cert-dir=${join(dir, 'certs')}`]);
  t.after(() => a.stop());
  const holder = readLock(dir);
  assert.equal(holder.host, hostname());
  const kubeconfigBefore = readFileSync(join(dir, 'admin.kubeconfig'), 'utf8');
  const caMtime = statSync(join(dir, 'certs', 'ca.crt')).mtimeMs;

  const b = await serveUntilExit(['--data-dir', dir]);
  assert.equal(b.code, 2, b.stderr);
  assert.equal(
    b.stderr,
    `error: the data directory ${dir} is in use by another reverser-apiserver (pid ${holder.pid} on host ${holder.host} since ${holder.since}; ` +
      `lock file ${join(dir, LOCK)}); stop that process or use another --data-dir\n`,
  );
  assert.equal(b.stdout, '');
  assert.equal(readFileSync(join(dir, 'admin.kubeconfig'), 'utf8'), kubeconfigBefore, 'admin.kubeconfig untouched');
  assert.equal(statSync(join(dir, 'certs', 'ca.crt')).mtimeMs, caMtime, 'certificates untouched');
  assert.deepEqual(readLock(dir), holder, 'the lock still names the first server');
  assert.ok(a.alive());
  const r = await a.get('/healthz');
  assert.equal(r.status, 200);

  // A clean stop releases the lock.
  await a.stop();
  assert.equal(existsSync(join(dir, LOCK)), false);
});

test('the lock of a killed server is stale: the next server takes it over and says so at warn', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A process that held the lock and died without releasing it (SIGKILL).
  const dead = spawn(process.execPath, ['-e', '0']);
  const deadPid = dead.pid!;
  await new Promise((r) => dead.once('exit', r));
  writeFileSync(join(dir, LOCK), JSON.stringify({ pid: deadPid, host: hostname(), since: '2026-01-01T00:00:00.000Z' }) + '\n');

  const c = await startServer(['--data-dir', dir, `--cert-dir=${join(dir, 'certs')}`]);
  t.after(() => c.stop());
  const lock = readLock(dir);
  assert.notEqual(lock.pid, deadPid);
  const warn = c.stderr().split('\n').filter((l) => l.includes('stale')).map((l) => JSON.parse(l));
  assert.equal(warn.length, 1, c.stderr());
  assert.equal(warn[0].level, 'warn');
  assert.equal(warn[0].msg, 'took over a stale data directory lock');
  assert.equal(warn[0].previousPid, deadPid);
  assert.equal(warn[0].lock, join(dir, LOCK));
});

test('a lock held by another host is never taken over', { timeout: 30_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, LOCK), JSON.stringify({ pid: 1, host: 'elsewhere.example', since: '2026-01-01T00:00:00.000Z' }) + '\n');
  const b = await serveUntilExit(['--data-dir', dir]);
  assert.equal(b.code, 2, b.stderr);
  assert.equal(
    b.stderr,
    `error: the data directory ${dir} is in use by another reverser-apiserver (pid 1 on host elsewhere.example since 2026-01-01T00:00:00.000Z; ` +
      `lock file ${join(dir, LOCK)}); stop that process or use another --data-dir; if that host no longer runs it, delete ${join(dir, LOCK)}\n`,
  );
  assert.equal(existsSync(join(dir, 'certs')), false, 'nothing written before the lock');
});

void MAIN;

test('release removes only our own lock: a lock another holder wrote since (same pid and start time) stays', async (t) => {
  const { lockDataDir } = await import('../../src/storage/data-dir-lock.js');
  const dir = mkdtempSync(join(tmpdir(), 'sec-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Another holder whose pid and start time equal ours (pid 1 of a restarted container on the same
  // host name): only the token tells them apart.
  const a = lockDataDir(dir);
  const other = { ...readLock(dir), token: 'another-holder' };
  writeFileSync(join(dir, LOCK), JSON.stringify(other) + '\n');
  a.release();
  assert.deepEqual(readLock(dir), other, 'the other holder\'s lock is kept');
  rmSync(join(dir, LOCK));

  // In one process: b takes over a's lock (our own pid counts as stale), then a releases late.
  const first = lockDataDir(dir);
  const second = lockDataDir(dir);
  const held = readLock(dir);
  first.release();
  assert.deepEqual(readLock(dir), held, 'the second lock survives the first one\'s release');
  second.release();
  assert.equal(existsSync(join(dir, LOCK)), false);
  assert.deepEqual(readdirSync(dir), [], 'nothing left aside');
});

test('npm start, then Ctrl-C (SIGINT to the process group): the server stops cleanly and releases the lock', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sec-lock-npm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  // detached: its own process group, as a terminal's foreground job is.
  const npm = spawn('npm', ['start', '--', '--data-dir', dir, '--secure-port', String(port), '--controllers=none'], {
    cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
  t.after(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  });
  await until(() => out.includes('reverser-apiserver is serving on'), `npm start to serve:\n${out}`, 60_000, 50);
  const holder = readLock(dir);
  assert.notEqual(holder.pid, npm.pid, 'the server holds the lock, not npm');
  process.kill(-npm.pid!, 'SIGINT');
  await withDeadline(exited, `npm start to exit after SIGINT:\n${out}`, 30_000);
  // The server itself (npm may exit first) is gone, and so is its lock.
  await until(() => {
    try {
      process.kill(holder.pid, 0);
      return false;
    } catch {
      return true;
    }
  }, `the server (pid ${holder.pid}) to exit:\n${out}`, 30_000, 50);
  assert.equal(existsSync(join(dir, LOCK)), false, `lock released:\n${out}`);
  const stopped = out.split('\n').filter((l) => l.includes('shutting down')).map((l) => JSON.parse(l));
  assert.deepEqual(stopped.map((l) => [l.msg, l.signal]), [['shutting down', 'SIGINT']], out);
  assert.doesNotMatch(out, /"level":"error"|Error:/, out);
  // The port is free again: the next start on the same directory works at once.
  const again = await startServer(['--data-dir', dir, `--cert-dir=${join(dir, 'certs')}`, '--secure-port', String(port)], { port });
  await again.stop();
});
