// /metrics: Prometheus text with request, watch and storage metrics; not an always-allowed path.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, ns, startServer, type StartedServer } from '../support/server.js';

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

test('/metrics is not public: an anonymous request is 401', async () => {
  const r = await server.request('GET', '/metrics', { anonymous: true });
  assert.equal(r.status, 401);
  assert.equal(r.body.reason, 'Unauthorized');
});
