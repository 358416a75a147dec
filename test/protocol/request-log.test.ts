// --log-level=debug logs one line per request (verb, path, user, code, latency), like
// kube-apiserver's httplog, and never a body, a query or a credential.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, ns, startServer, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';

let server: StartedServer;
before(async () => {
  server = await startServer(['--log-level=debug']);
});
after(() => server?.stop());

const requestLines = () =>
  server.stderr().split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.level === 'debug' && e.msg === 'request');

test('one debug line per request with verb, path, user, code and latency; no body, query or token', async () => {
  const before = requestLines().length;
  const body = gitTarget('logged', 'rl');
  body.spec.branch = 'SECRET-BODY-VALUE';
  assert.equal((await server.request('POST', ns('rl'), { body })).status, 201);
  assert.equal((await server.get(`${ns('rl')}/logged?labelSelector=QUERYVALUE`)).status, 200);
  assert.equal((await server.get(`${ns('rl')}/missing`)).status, 404);
  const anon = await server.request('GET', ns('rl'), { anonymous: true, headers: { authorization: 'Bearer TOKEN-VALUE-123' } });
  assert.equal(anon.status, 401);
  await until(() => requestLines().length >= before + 4, 'four request log lines', 10_000);
  const lines = requestLines().slice(before);
  assert.deepEqual(lines.map((l) => [l.verb, l.path, l.user, l.code]), [
    ['create', ns('rl'), 'admin', 201],
    ['get', `${ns('rl')}/logged`, 'admin', 200],
    ['get', `${ns('rl')}/missing`, 'admin', 404],
    ['list', ns('rl'), '', 401],
  ]);
  for (const l of lines) {
    assert.equal(typeof l.latencyMs, 'number');
    assert.deepEqual(Object.keys(l).sort(), ['code', 'latencyMs', 'level', 'msg', 'path', 'time', 'user', 'verb']);
  }
  const all = server.stderr();
  for (const secret of ['SECRET-BODY-VALUE', 'QUERYVALUE', 'TOKEN-VALUE-123']) assert.equal(all.includes(secret), false, `${secret} reached the log`);
});
