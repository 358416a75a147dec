// What start-up builds is only what serving needs: the served resources' schemas are compiled (and
// ajv loaded) on the first validation, the OpenAPI documents built on the first request for one
// (and protobufjs loaded only for the protobuf form), and node-forge on the first certificate made
// (src/certs/pki.ts). All three are CommonJS, loaded with require, so Node's require cache says
// whether they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { RESOURCES, SANDBOX_RESOURCES, gitTargets } from '../../src/api/resources.js';
import { compileSchema } from '../../src/api/validation.js';
import { buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';

const loaded = (pkg: string) => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes(`/node_modules/${pkg}/`));

test('schemas compile on first validation; OpenAPI documents build on first use', () => {
  const validators = [...RESOURCES, ...SANDBOX_RESOURCES].map((d) => compileSchema(d.schema));
  const docs = buildOpenAPIDocuments([...RESOURCES, ...SANDBOX_RESOURCES], { title: 'reverser-apiserver', version: 'v0.1.0' });
  assert.equal(loaded('ajv'), false, 'ajv is not loaded before an object is validated');
  assert.equal(loaded('protobufjs'), false, 'protobufjs is not loaded before the protobuf document is asked for');

  const r = validators[RESOURCES.indexOf(gitTargets)]!.validate({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'x' }, spec: { branch: 7 } }, 'Strict');
  assert.ok(loaded('ajv'), 'the first validation loads ajv');
  assert.ok(r.errors.some((e) => e.field === 'spec.branch'), `the lazily compiled schema validates: ${JSON.stringify(r.errors)}`);

  assert.match(docs.v3Root.body.toString(), /"serverRelativeURL":"\/openapi\/v3\/apis\/configbutler.ai\/v1alpha1\?hash=[0-9A-F]{128}"/);
  assert.equal(JSON.parse(docs.v2Json.body.toString()).swagger, '2.0');
  assert.equal(loaded('protobufjs'), false, 'the JSON documents do not load protobufjs');
  const proto = docs.v2Protobuf;
  assert.ok(loaded('protobufjs'), 'the protobuf document loads protobufjs');
  assert.ok(proto.body.length > 1000 && /^"[0-9A-F]{128}"$/.test(proto.etag), 'the protobuf document and its ETag');
  assert.equal(docs.v2Protobuf, proto, 'built once');
});

test('node-forge is not loaded by the server\'s modules: only the first certificate made loads it', async () => {
  await import('../../src/server/run.js');
  await import('../../src/server/config.js');
  assert.equal(loaded('node-forge'), false, 'importing the server does not load node-forge');
  const { createCA } = await import('../../src/certs/pki.js');
  assert.match(createCA('lazy-forge-test', 1).certPem, /^-----BEGIN CERTIFICATE-----/);
  assert.ok(loaded('node-forge'), 'making a certificate loads it');
});
