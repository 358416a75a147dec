// Item 6 of issue 8: two servers on one --data-dir handed out the same resourceVersions and the
// second rewrote admin.kubeconfig. The directory is locked before anything is written into it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.js';
import { MAIN, serveUntilExit } from './serve-process.js';

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
