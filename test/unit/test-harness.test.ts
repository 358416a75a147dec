// The suite cannot hang: the runner gives every test file a deadline, and the waits in test/support
// (watch events, stream ends, helper processes) reject with a message instead of waiting forever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { EventReader } from '../support/server.js';
import { DeadlineError, until, withDeadline } from '../support/deadline.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

test('the runner fails a test file that hangs once TEST_FILE_TIMEOUT_MS passes, and ends its process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-'));
  try {
    const pidFile = join(dir, 'pid');
    // NODE_TEST_CONTEXT tells node it runs inside a test file; the runner under test is a fresh run.
    const { NODE_TEST_CONTEXT: _inside, ...env } = process.env;
    const started = Date.now();
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        ['scripts/run-tests.mjs'],
        {
          cwd: REPO,
          timeout: 60_000,
          killSignal: 'SIGKILL',
          env: { ...env, TEST_ROOT: 'dist/test/unit/fixtures/runner', TEST_FILE_TIMEOUT_MS: '1500', HANG_PID_FILE: pidFile },
        },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, out: stdout + stderr }),
      );
    });
    const elapsed = Date.now() - started;
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /hangs\.test\.js/);
    assert.match(r.out, /test timed out after 1500ms/);
    assert.ok(elapsed < 30_000, `the runner took ${elapsed} ms`);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const gone = () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    await until(gone, `the hanging test process ${pid} to be ended`, 5000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A response whose headers arrive and then nothing: a watch that never delivers. */
async function silentStream(t: import('node:test').TestContext, body = ''): Promise<IncomingMessage> {
  const open = new Set<ServerResponse>();
  const server = createServer((_req, res) => {
    open.add(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const res of open) res.destroy();
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  return withDeadline(
    new Promise<IncomingMessage>((resolve, reject) => request({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject).end()),
    'the silent stream headers',
    5000,
  );
}

test('EventReader.next() and end() reject after their deadline when the stream stays silent', async (t) => {
  const reader = new EventReader(await silentStream(t));
  try {
    await assert.rejects(reader.next(300), (e: unknown) => {
      assert.ok(e instanceof DeadlineError);
      assert.equal((e as Error).message, 'timed out after 300 ms waiting for the next watch event');
      return true;
    });
    await assert.rejects(reader.end(300), /timed out after 300 ms waiting for the watch stream to end/);
  } finally {
    reader.close();
  }
});

test('EventReader: an event that arrives after a timed-out next() goes to the next call', async (t) => {
  const reader = new EventReader(await silentStream(t, '{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'));
  try {
    const first = await reader.next(5000);
    assert.equal(first.object.metadata.name, 'a');
    await assert.rejects(reader.next(200), DeadlineError);
    assert.equal(reader.pending(), 0);
  } finally {
    reader.close();
  }
});

test('withDeadline runs the release hook, until() names what it waited for', async () => {
  let released = false;
  await assert.rejects(withDeadline(new Promise(() => {}), 'nothing', 50, () => (released = true)), /timed out after 50 ms waiting for nothing/);
  assert.equal(released, true);
  assert.equal(await withDeadline(Promise.resolve(7), 'seven', 50), 7);
  await assert.rejects(until(() => false, 'a condition that never holds', 60, 10), /timed out after 60 ms waiting for a condition that never holds/);
});
