// #8 item 15: every error leaves as a metav1.Status whose message speaks Kubernetes, never a
// library's internals: JSON-patch failures (a `move` into its own child used to answer "Cannot set
// properties of undefined"), HTTP/1.1 requests the parser refuses (431 and 400 used to carry
// fastify's own JSON). Redis errors are covered in http-redis-bounds.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { assertStatus, gitTarget, ns, startServer, type StartedServer } from '../support/server.js';

/** Sends raw bytes over TLS (HTTP/1.1) and returns the raw answer. */
function raw(server: StartedServer, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: server.port, ca: server.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'], cert: server.cert, key: server.key }, () => s.write(request));
    let out = '';
    s.setEncoding('utf8');
    s.on('data', (c: string) => (out += c));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer: ${out}`));
    }, 10_000).unref();
  });
}

function statusOf(answer: string): { code: number; body: any; contentType: string } {
  const [head, body] = answer.split('\r\n\r\n');
  return { code: Number(/^HTTP\/1\.1 (\d+)/.exec(head!)?.[1]), body: JSON.parse(body!), contentType: /content-type: ([^\r]+)/i.exec(head!)?.[1] ?? '' };
}

test('JSON-patch failures are worded about the patch', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const path = `${ns('default')}/p`;
  assert.equal((await server.request('POST', ns('default'), { body: gitTarget('p') })).status, 201);
  const patch = (ops: unknown) => server.request('PATCH', path, { body: ops, contentType: 'application/json-patch+json' });
  const invalid = (msg: string) => `the server rejected our request due to an error in our request: ${msg}`;
  assertStatus(
    await patch([{ op: 'move', from: '/spec', path: '/spec/x' }]),
    422,
    'Invalid',
    invalid('operation 0 (move from "/spec" at "/spec/x"): a value cannot be moved into one of its own children'),
  );
  assertStatus(await patch([{ op: 'add', path: '/spec/nope/x', value: 1 }]), 422, 'Invalid', invalid('operation 0 (add at "/spec/nope/x"): the path does not exist in the object'));
  assertStatus(await patch([{ op: 'remove', path: '/spec/nope' }]), 422, 'Invalid', invalid('operation 0 (remove at "/spec/nope"): the path does not exist in the object'));
  assertStatus(await patch([{ op: 'test', path: '/spec/branch', value: 'dev' }]), 422, 'Invalid', invalid('operation 0 (test at "/spec/branch"): the test failed: the value at the path differs'));
  assertStatus(await patch([{ op: 'copy', from: '/nope', path: '/spec/x' }]), 422, 'Invalid', invalid('operation 0 (copy from "/nope" at "/spec/x"): the "from" path does not exist in the object'));
  assertStatus(await patch([{ op: 'jump', path: '/spec' }]), 400, 'BadRequest', 'invalid JSON patch: operation 0: "op" must be one of add, remove, replace, move, copy, test');
  // __proto__ is an ordinary key here (test/security/proto-keys.test.ts): metadata has none, so the parent is missing.
  assertStatus(await patch([{ op: 'add', path: '/metadata/__proto__/x', value: 1 }]), 422, 'Invalid', invalid('operation 0 (add at "/metadata/__proto__/x"): the path does not exist in the object'));
  const got = await server.get(path);
  assert.equal(got.body.spec.branch, 'main');
});

test('HTTP/1.1 requests the parser refuses get a Status body', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const big = statusOf(await raw(server, `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
  assert.equal(big.code, 431);
  assert.equal(big.contentType, 'application/json');
  assert.deepEqual(big.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the request headers are larger than the server accepts (16 KiB in total)',
    reason: 'RequestHeaderFieldsTooLarge',
    code: 431,
  });
  const garbage = statusOf(await raw(server, 'GET /healthz HTTP/1.1\r\nHost localhost\r\n\r\n'));
  assert.equal(garbage.code, 400);
  assert.equal(garbage.body.kind, 'Status');
  assert.equal(garbage.body.reason, 'BadRequest');
  assert.equal(garbage.body.message, 'the request is not valid HTTP/1.1; the connection is closed');
});
