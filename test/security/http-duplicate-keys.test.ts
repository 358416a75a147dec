// #8 item 13: duplicate JSON (and YAML) keys. Strict, the default, refuses them with Kubernetes'
// strict-decoding wording; Warn accepts with a warning; Ignore keeps the last one silently.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStatus, ns, startServer } from '../support/server.js';

const body = (meta: string, spec = '"repository":{"url":"https://example.com/r.git"},"branch":"main","path":"."') =>
  `{"apiVersion":"configbutler.ai/v1alpha1","kind":"GitTarget","metadata":{${meta}},"spec":{${spec}}}`;
const cannot = (fields: string) => `GitTarget in version "v1alpha1" cannot be handled as a GitTarget: strict decoding error: ${fields}`;

test('duplicate keys: Strict refuses, Warn warns, Ignore keeps the last', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const NS = ns('default');

  assertStatus(await server.request('POST', NS, { body: body('"name":"a","name":"b"') }), 400, 'BadRequest', cannot('duplicate field "metadata.name"'));
  assertStatus(
    await server.request('POST', NS, { body: `{"kind":"GitTarget","kind":"GitTarget",${body('"name":"k"').slice(1)}` }),
    400,
    'BadRequest',
    cannot('duplicate field "kind", duplicate field "kind"'),
  );
  assertStatus(
    await server.request('POST', NS, { body: body('"name":"s"', '"repository":{"url":"https://example.com/r.git"},"branch":"main","branch":"dev","path":"."') }),
    400,
    'BadRequest',
    cannot('duplicate field "spec.branch"'),
  );
  // Escaped keys are compared decoded: "n\u0061me" is "name".
  assertStatus(await server.request('POST', NS, { body: body('"name":"a","n\\u0061me":"b"') }), 400, 'BadRequest', cannot('duplicate field "metadata.name"'));
  assertStatus(
    await server.request('POST', NS, { body: 'apiVersion: configbutler.ai/v1alpha1\nkind: GitTarget\nmetadata:\n  name: y\n  name: z\n', contentType: 'application/yaml' }),
    400,
    'BadRequest',
    cannot('duplicate field "name"'),
  );
  assert.equal((await server.get(`${NS}/a`)).status, 404);
  assert.equal((await server.get(`${NS}/b`)).status, 404);

  const warned = await server.request('POST', `${NS}?fieldValidation=Warn`, { body: body('"name":"a","name":"b"') });
  assert.equal(warned.status, 201, warned.text);
  assert.equal(warned.body.metadata.name, 'b');
  assert.equal(warned.headers.warning, '299 - "duplicate field \\"metadata.name\\""');

  const ignored = await server.request('POST', `${NS}?fieldValidation=Ignore`, { body: body('"name":"c","name":"d"') });
  assert.equal(ignored.status, 201, ignored.text);
  assert.equal(ignored.body.metadata.name, 'd');
  assert.equal(ignored.headers.warning, undefined);

  // Patches too.
  assertStatus(
    await server.request('PATCH', `${NS}/b`, { body: '{"metadata":{"labels":{"x":"1","x":"2"}}}', contentType: 'application/merge-patch+json' }),
    400,
    'BadRequest',
    'strict decoding error: duplicate field "metadata.labels.x"',
  );
  assertStatus(
    await server.request('PATCH', `${NS}/b`, { body: '[{"op":"add","op":"remove","path":"/metadata/labels"}]', contentType: 'application/json-patch+json' }),
    400,
    'BadRequest',
    'strict decoding error: duplicate field "[0].op"',
  );
});
