// #8 item 4: bodies nested 10,000 deep (merge patch, JSON patch, create in JSON and in YAML)
// answer 400 BadRequest before any recursive code sees them; the server stays up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStatus, gitTarget, ns, startServer } from '../support/server.js';

const DEPTH = 10_000;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const deepArray = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const TOO_DEEP = (what: string) => `the ${what} could not be decoded: it nests objects or arrays deeper than 100 levels`;

test('10,000-deep bodies answer 400 BadRequest, not 500', { timeout: 60_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const path = `${ns('default')}/deep`;
  assert.equal((await server.request('POST', ns('default'), { body: gitTarget('deep') })).status, 201);

  const merge = await server.request('PATCH', path, { body: `{"metadata":{"annotations":${deepObject(DEPTH)}}}`, contentType: 'application/merge-patch+json' });
  assertStatus(merge, 400, 'BadRequest', TOO_DEEP('patch'));
  const jsonPatch = await server.request('PATCH', path, {
    body: `[{"op":"add","path":"/spec/x","value":${deepArray(DEPTH)}}]`,
    contentType: 'application/json-patch+json',
  });
  assertStatus(jsonPatch, 400, 'BadRequest', TOO_DEEP('patch'));
  const create = await server.request('POST', ns('default'), { body: `{"apiVersion":"configbutler.ai/v1alpha1","kind":"GitTarget","spec":${deepObject(DEPTH)}}` });
  assertStatus(create, 400, 'BadRequest', TOO_DEEP('object provided'));
  // YAML: flow collections and block mappings.
  const flow = await server.request('POST', ns('default'), { body: `kind: GitTarget\nspec: ${deepArray(DEPTH)}\n`, contentType: 'application/yaml' });
  assertStatus(flow, 400, 'BadRequest', TOO_DEEP('object provided'));
  let block = 'spec:\n';
  for (let i = 1; i <= 500; i++) block += `${' '.repeat(i)}a${i}:\n`;
  const blockRes = await server.request('POST', ns('default'), { body: `${block}${' '.repeat(501)}x: 1\n`, contentType: 'application/yaml' });
  assertStatus(blockRes, 400, 'BadRequest', TOO_DEEP('object provided'));

  // Within the limit still works, and the server is alive and unchanged.
  const ok = await server.request('PATCH', path, { body: `{"metadata":{"annotations":{"n":"1"}}}`, contentType: 'application/merge-patch+json' });
  assert.equal(ok.status, 200, ok.text);
  assert.ok(server.alive());
  assert.doesNotMatch(server.stderr(), /internal error|Maximum call stack/);
});
