// What a tenant's git remote may cost the engine (src/git/remote-limits.ts, http-client.ts,
// cancel.ts, errors.ts): a response over the cap, a remote that never answers or stalls mid-body,
// a certificate that does not verify, and a cancelled commit each end in a typed error at once,
// with the transfer stopped — checked against a hostile remote on loopback
// (test/support/hostile-remote.ts) in front of a real git http-backend.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine, GitEngineError, type GitEngineOptions } from '../../src/git/index.js';
import { remoteWork } from '../../src/git/cancel.js';
import { startGitServer } from '../support/git-server.js';
import { startHostileRemote, type HostileMode, type HostileRemote } from '../support/hostile-remote.js';
import { withDeadline } from '../support/deadline.js';
import { configMap } from './git-cli.js';
import { createServer as createHttpsServer } from 'node:https';
import { issueServerCert, makeCA } from '../support/pki.js';

const alice = { name: 'Alice Doe', email: 'alice@example.com' };

async function setup(t: TestContext, mode: HostileMode, opts: Partial<GitEngineOptions> = {}) {
  const server = await startGitServer();
  server.createBareRepo('config');
  const remote = await startHostileRemote(server.port, mode);
  const dataDir = mkdtempSync(join(tmpdir(), 'remote-limits-'));
  t.after(async () => {
    await remote.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  // As the server runs it: a network failure is reported by its first attempt.
  const engine = new GitEngine({ dataDir, retryTimeoutMs: 5_000, unreachableRetryMs: 0, allowInsecureCredentials: true, ...opts });
  const commit = () =>
    engine.commit({
      repository: { url: remote.url('config'), credentials: { username: server.username, password: server.password } },
      branch: 'main',
      folder: 'clusters/a',
      changes: [{ op: 'write', object: configMap('app', 'team-a', { k: 'v' }), resource: 'configmaps' }],
      author: alice,
      message: 'one change',
    });
  return { server, remote, commit, where: `http://127.0.0.1:${remote.port}/config.git` };
}

async function failure(p: Promise<unknown>, what: string): Promise<GitEngineError> {
  const e = await withDeadline(p.then(() => undefined, (err: unknown) => err), what, 15_000);
  assert.ok(e instanceof GitEngineError, `expected a GitEngineError, got ${String(e)}`);
  return e;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The transfer stopped: nothing is open at the remote and no more bytes go out. */
async function assertStopped(remote: HostileRemote): Promise<void> {
  await withDeadline(
    (async () => {
      while (remote.openRequests() > 0) await sleep(20);
    })(),
    'the remote to see its connection closed',
    5_000,
  );
  const before = remote.bytesStreamed();
  await sleep(300);
  assert.equal(remote.bytesStreamed(), before, 'bytes kept flowing after the transfer should have stopped');
}

test('a response over the cap ends the commit with RemoteResponseTooLarge and closes the connection', async (t) => {
  const { remote, commit, where } = await setup(t, 'endless', { remoteLimits: { maxResponseBytes: 1024 * 1024 } });
  const e = await failure(commit(), 'the capped commit to fail');
  assert.equal(e.reason, 'RemoteResponseTooLarge');
  assert.equal(e.retryable, false);
  assert.equal(e.message, `${where} sent a response larger than 1048576 bytes (--git-max-response-bytes); the transfer was stopped`);
  await assertStopped(remote);
  // One request, and not much more than the cap was sent before the socket closed (kernel buffers).
  assert.equal(remote.requestCount(), 1);
  assert.ok(remote.bytesStreamed() < 16 * 1024 * 1024, `streamed ${remote.bytesStreamed()} bytes`);
});

test('the cap applies to a real repository\'s answers too', async (t) => {
  // A real repository's advertisement is a few hundred bytes: a 16-byte cap stops it.
  const { remote, commit, where } = await setup(t, 'pass', { remoteLimits: { maxResponseBytes: 16 } });
  const e = await failure(commit(), 'the commit to fail on the cap');
  assert.equal(e.reason, 'RemoteResponseTooLarge');
  assert.equal(e.message, `${where} sent a response larger than 16 bytes (--git-max-response-bytes); the transfer was stopped`);
  assert.equal(remote.requestCount(), 1);
});

test('a remote that never answers: Unreachable after the headers time limit, one request', async (t) => {
  const { remote, commit, where } = await setup(t, 'hang', { remoteLimits: { headersTimeoutMs: 500 } });
  const started = Date.now();
  const e = await failure(commit(), 'the hanging commit to fail');
  const took = Date.now() - started;
  assert.equal(e.reason, 'Unreachable');
  assert.equal(e.retryable, true);
  assert.equal(e.message, `${where}: no response headers within 500 ms`);
  assert.ok(took >= 450 && took < 5_000, `took ${took} ms`);
  assert.equal(remote.requestCount(), 1);
  await assertStopped(remote);
});

test('a body that stalls: Unreachable after the body idle time limit', async (t) => {
  const { remote, commit, where } = await setup(t, 'stall-body', { remoteLimits: { bodyIdleTimeoutMs: 400 } });
  const e = await failure(commit(), 'the stalled commit to fail');
  assert.equal(e.reason, 'Unreachable');
  assert.equal(e.message, `${where}: no data of the response body arrived within 400 ms`);
  await assertStopped(remote);
});

test('a trickle that never ends: Unreachable at the total time limit', async (t) => {
  const { remote, commit, where } = await setup(t, 'endless', { remoteLimits: { maxResponseBytes: 16 * 1024 * 1024 * 1024, totalTimeoutMs: 700 } });
  const e = await failure(commit(), 'the endless commit to hit the total limit');
  assert.equal(e.reason, 'Unreachable');
  assert.equal(e.message, `${where}: the request did not complete within 700 ms`);
  await assertStopped(remote);
});

test('cancelling a commit stops its transfer at once', async (t) => {
  const { remote, commit } = await setup(t, 'endless', { remoteLimits: { maxResponseBytes: 16 * 1024 * 1024 * 1024 } });
  const cancel = new AbortController();
  const p = remoteWork.run(cancel.signal, commit);
  await withDeadline(
    (async () => {
      while (remote.bytesStreamed() < 8 * 1024 * 1024) await sleep(10);
    })(),
    '8 MiB to stream',
    10_000,
  );
  cancel.abort();
  const e = await failure(p, 'the cancelled commit to fail');
  assert.equal(e.reason, 'Cancelled');
  assert.equal(e.message, 'the commit was cancelled (its GitTarget was deleted or the server is shutting down); its changes stay pending');
  await assertStopped(remote);
});

test('answers a retry cannot fix are typed, not retried: 401, 404, a web page; a 503 is retryable', async (t) => {
  const cases: Array<[HostileMode, string, boolean, (where: string) => string]> = [
    ['status401', 'AuthFailed', false, (w) => `authentication to ${w} failed (HTTP 401); check the credentials Secret`],
    ['status404', 'NotFound', false, (w) => `repository ${w} not found (HTTP 404)`],
    ['plain200', 'NotFound', false, (w) => `${w} is not a Git smart-HTTP repository (no receive-pack advertisement)`],
    ['status503', 'Unreachable', true, (w) => `${w} answered HTTP 503`],
  ];
  for (const [mode, reason, retryable, message] of cases) {
    const { remote, commit, where } = await setup(t, mode);
    const e = await failure(commit(), `the ${mode} commit to fail`);
    assert.deepEqual({ reason: e.reason, retryable: e.retryable, message: e.message }, { reason, retryable, message: message(where) }, mode);
    assert.equal(remote.requestCount(), 1, `${mode}: requests`);
  }
});

test('a certificate that does not verify is TLSVerificationFailed, not retried', async (t) => {
  // An HTTPS remote whose certificate comes from a CA the process does not trust.
  const ca = makeCA('untrusted test CA');
  const cert = issueServerCert(ca, '127.0.0.1');
  let requests = 0;
  const server = createHttpsServer({ key: cert.keyPem, cert: cert.certPem }, (_req, res) => {
    requests++;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const dataDir = mkdtempSync(join(tmpdir(), 'remote-limits-tls-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const engine = new GitEngine({ dataDir, retryTimeoutMs: 5_000, unreachableRetryMs: 0 });
  const url = `https://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/config.git`;
  const e = await failure(
    engine.commit({ repository: { url }, branch: 'main', folder: 'a', changes: [{ op: 'write', object: configMap('app', 'team-a', { k: 'v' }), resource: 'configmaps' }], author: alice, message: 'x' }),
    'the TLS commit to fail',
  );
  assert.deepEqual({ reason: e.reason, retryable: e.retryable, message: e.message }, { reason: 'TLSVerificationFailed', retryable: false, message: `the TLS certificate of ${url} did not verify (UNABLE_TO_VERIFY_LEAF_SIGNATURE)` });
  assert.equal(requests, 0);
});
