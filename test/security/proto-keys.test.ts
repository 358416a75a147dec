// `__proto__` is a valid ConfigMap data key. It must round-trip exactly through create, get, merge
// patch, JSON patch (add, replace, copy, remove) and server-side apply, and into the YAML written
// to Git (sanitize, encode, in-place edit) — never dropped, never turned into a prototype. A JSON
// patch that walks `constructor/prototype` reaches nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type StartedServer } from '../support/server.js';
import { sanitizeObject } from '../../src/controllers/mirror/sanitize.js';
import { editFileText, encodeObject } from '../../src/git/manifest-yaml.js';

let server: StartedServer;
const CMS = '/api/v1/namespaces/default/configmaps';

before(async () => {
  server = await startServer(['--sandbox']);
});
after(async () => {
  await server?.stop();
});

/** The data of a ConfigMap as the server serves it, with `__proto__` checked as an own key. */
async function data(name: string): Promise<Record<string, unknown>> {
  const r = await server.request('GET', `${CMS}/${name}`);
  assert.equal(r.status, 200, r.text);
  const d = JSON.parse(r.text).data ?? {};
  return Object.fromEntries(Object.entries(d).sort(([a], [b]) => a.localeCompare(b)));
}
const own = (entries: Array<[string, string]>) => Object.fromEntries(entries);

test('__proto__ data keys round-trip through create, get, merge patch, JSON patch and apply', { timeout: 60_000 }, async () => {
  const created = await server.request('POST', CMS, { body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"__proto__":"x","b":"y"}}', contentType: 'application/json' });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(await data('p'), own([['__proto__', 'x'], ['b', 'y']]));

  // Merge patch adding the key to an object without it.
  assert.equal((await server.request('POST', CMS, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'q' }, data: { b: 'y' } } })).status, 201);
  const merged = await server.request('PATCH', `${CMS}/q`, { body: '{"data":{"__proto__":"m"}}', contentType: 'application/merge-patch+json' });
  assert.equal(merged.status, 200, merged.text);
  assert.deepEqual(await data('q'), own([['__proto__', 'm'], ['b', 'y']]));

  const jsonPatch = (ops: string) => server.request('PATCH', `${CMS}/q`, { body: ops, contentType: 'application/json-patch+json' });
  assert.equal((await jsonPatch('[{"op":"replace","path":"/data/__proto__","value":"r"}]')).status, 200);
  assert.deepEqual(await data('q'), own([['__proto__', 'r'], ['b', 'y']]));
  assert.equal((await jsonPatch('[{"op":"copy","from":"/data/__proto__","path":"/data/c"},{"op":"remove","path":"/data/__proto__"}]')).status, 200);
  assert.deepEqual(await data('q'), own([['b', 'y'], ['c', 'r']]));
  assert.equal((await jsonPatch('[{"op":"add","path":"/data/__proto__","value":"a"}]')).status, 200);
  assert.deepEqual(await data('q'), own([['__proto__', 'a'], ['b', 'y'], ['c', 'r']]));
  const walk = await jsonPatch('[{"op":"add","path":"/metadata/constructor/prototype/polluted","value":"yes"}]');
  assert.equal(walk.status, 422, walk.text);
  assert.equal(walk.body.message, 'the server rejected our request due to an error in our request: operation 0 (add at "/metadata/constructor/prototype/polluted"): the path does not exist in the object');

  const applied = await server.request('PATCH', `${CMS}/s?fieldManager=tester`, {
    body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  __proto__: applied\n  b: "y"\n',
    contentType: 'application/apply-patch+yaml',
  });
  assert.equal(applied.status, 201, applied.text);
  assert.deepEqual(await data('s'), own([['__proto__', 'applied'], ['b', 'y']]));
});

test('__proto__ data keys reach the YAML written to Git', () => {
  const obj = JSON.parse('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"d","resourceVersion":"3"},"data":{"__proto__":"x","b":"y"}}');
  const text = encodeObject(sanitizeObject(obj));
  assert.equal(text, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  namespace: d\ndata:\n  __proto__: x\n  b: "y"\n');
  const next = JSON.parse('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"d"},"data":{"__proto__":"x2","b":"y"}}');
  assert.equal(editFileText(text, { writes: [next], deletes: [] }), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  namespace: d\ndata:\n  __proto__: x2\n  b: "y"\n');
});
