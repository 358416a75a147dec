// /metrics: Prometheus text with request, watch and storage metrics; not an always-allowed path.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, ns, startServer, watch, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';

let server: StartedServer;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('/metrics counts requests by verb, resource and code, and times storage operations', async () => {
  const created = await server.request('POST', ns('m1'), { body: gitTarget('metered', 'm1') });
  assert.equal(created.status, 201, created.text);
  assert.equal((await server.get(`${ns('m1')}/metered`)).status, 200);
  assert.equal((await server.get(`${ns('m1')}/missing`)).status, 404);
  const r = await server.get('/metrics');
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const text = r.text;
  assert.equal(sample(text, 'apiserver_request_total', 'verb="create",resource="gittargets",code="201"'), 1);
  assert.equal(sample(text, 'apiserver_request_total', 'verb="get",resource="gittargets",code="200"'), 1);
  assert.equal(sample(text, 'apiserver_request_total', 'verb="get",resource="gittargets",code="404"'), 1);
  assert.equal(sample(text, 'reverser_storage_operation_duration_seconds_count', 'operation="create",resource="gittargets",result="ok"'), 1);
  assert.ok((sample(text, 'reverser_storage_operation_duration_seconds_count', 'operation="get",resource="gittargets",result="ok"') ?? 0) >= 2);
  assert.match(text, /^# TYPE apiserver_request_duration_seconds histogram$/m);
  assert.match(text, /^# TYPE apiserver_longrunning_requests gauge$/m);
});

test('/metrics: the watch gauge counts open watch streams and drops when they close', async () => {
  const gauge = async () => sample((await server.get('/metrics')).text, 'apiserver_longrunning_requests', 'resource="gittargets"') ?? 0;
  assert.equal(await gauge(), 0);
  const a = await watch(server, `${ns('m2')}?watch=true`);
  const b = await watch(server, '/apis/configbutler.ai/v1alpha1/gittargets?watch=true');
  try {
    assert.equal(await gauge(), 2);
  } finally {
    a.close();
    b.close();
  }
  // The server notices the closed connections on its own schedule: wait, with a deadline.
  await until(async () => (await gauge()) === 0, 'the watch gauge to drop back to 0', 10_000, 50);
});

test('/metrics is not public: an anonymous request is 401', async () => {
  const r = await server.request('GET', '/metrics', { anonymous: true });
  assert.equal(r.status, 401);
  assert.equal(r.body.reason, 'Unauthorized');
});
