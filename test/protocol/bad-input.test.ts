// Bad input over HTTPS: malformed bodies (400), oversized bodies (413), unsupported content types
// (415), stale resourceVersions (409), unknown resources and versions (404). Exact Status bodies.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, assertStatus, gitTarget, ns, startServer, type Response, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

/** A Status failure, also served as JSON. */
function status(r: Response, code: number, reason: string, message?: string | RegExp): void {
  assert.match(String(r.headers['content-type']), /^application\/json/, `${r.status} ${r.text}`);
  assertStatus(r, code, reason, message);
}

const NS = ns('default');
const NOT_FOUND_PATH = 'the server could not find the requested resource';
const TOO_LARGE = 'the request body is larger than the limit of 3145728 bytes';
const OBJ_MEDIA = 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml';
const PATCH_MEDIA =
  'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml';

describe('malformed bodies → 400 BadRequest', () => {
  test('malformed JSON on create', async () => {
    status(await server.request('POST', NS, { body: '{"apiVersion": "configbutler.ai/v1alpha1", "kind":' }), 400, 'BadRequest', /^the object provided could not be decoded as JSON: /);
  });
  test('malformed YAML on create', async () => {
    status(
      await server.request('POST', NS, { body: 'apiVersion: configbutler.ai/v1alpha1\nkind: [GitTarget\nmetadata: {name: x\n', contentType: 'application/yaml' }),
      400,
      'BadRequest',
      /^the object provided could not be decoded as YAML: /,
    );
  });
  test('valid YAML is accepted on create', async () => {
    const yaml = 'apiVersion: configbutler.ai/v1alpha1\nkind: GitTarget\nmetadata: {name: from-yaml}\nspec: {repository: {url: "https://example.com/r.git"}, branch: main, path: "."}\n';
    const r = await server.request('POST', NS, { body: yaml, contentType: 'application/yaml' });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.metadata.name, 'from-yaml');
  });
  test('a JSON value that is not an object', async () => {
    status(await server.request('POST', NS, { body: '[1,2]' }), 400, 'BadRequest', 'the object provided is unrecognized (must be a JSON object of kind GitTarget)');
    status(await server.request('POST', NS, { body: 'null' }), 400, 'BadRequest', 'the object provided is unrecognized (must be a JSON object of kind GitTarget)');
  });
  test('an empty body', async () => {
    status(await server.request('POST', NS, { body: '' }), 400, 'BadRequest', 'the request body is empty; expected an object');
  });
  test('malformed JSON on update and on patches', async () => {
    const c = await server.request('POST', NS, { body: gitTarget('mal') });
    assert.equal(c.status, 201, c.text);
    status(await server.request('PUT', `${NS}/mal`, { body: '{"x":' }), 400, 'BadRequest', /^the object provided could not be decoded as JSON: /);
    status(await server.request('PATCH', `${NS}/mal`, { body: '{"x":', contentType: 'application/merge-patch+json' }), 400, 'BadRequest', /^the patch could not be decoded as JSON: /);
    status(await server.request('PATCH', `${NS}/mal`, { body: '[{"op":', contentType: 'application/json-patch+json' }), 400, 'BadRequest', /^the patch could not be decoded as JSON: /);
    status(await server.request('PATCH', `${NS}/mal`, { body: '{"op":"add"}', contentType: 'application/json-patch+json' }), 400, 'BadRequest', 'a JSON patch must be a JSON array of operations');
    status(await server.request('PATCH', `${NS}/mal`, { body: '[1]', contentType: 'application/merge-patch+json' }), 400, 'BadRequest', 'a merge patch must be a JSON object');
    status(await server.request('DELETE', `${NS}/mal`, { body: '{"propagationPolicy":' }), 400, 'BadRequest', /^the object provided could not be decoded as JSON: /);
  });
  test('apiVersion and kind must match the endpoint', async () => {
    const wrongVersion = { ...gitTarget('v'), apiVersion: 'configbutler.ai/v2' };
    status(
      await server.request('POST', NS, { body: wrongVersion }),
      400,
      'BadRequest',
      'the API version in the data (configbutler.ai/v2) does not match the expected API version (configbutler.ai/v1alpha1)',
    );
    const wrongKind = { ...gitTarget('k'), kind: 'CommitRequest' };
    status(await server.request('POST', NS, { body: wrongKind }), 400, 'BadRequest', 'the kind in the data (CommitRequest) does not match the expected kind (GitTarget)');
  });
});

describe('malformed URLs → 400 BadRequest Status', () => {
  for (const p of ['/%zz', `${GV}/namespaces/default/gittargets/%E0%A4%A`, `/apis/%`]) {
    test(`GET ${p}`, async () => {
      status(await server.get(p), 400, 'BadRequest', 'the request URL is malformed: invalid percent-encoding');
    });
  }
});

describe('oversized bodies → 413 RequestEntityTooLarge', () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 1, 0x61);
  test('create, update and patch bodies over 3 MiB', async () => {
    status(await server.request('POST', NS, { body: big }), 413, 'RequestEntityTooLarge', TOO_LARGE);
    status(await server.request('PUT', `${NS}/x`, { body: big }), 413, 'RequestEntityTooLarge', TOO_LARGE);
    status(await server.request('PATCH', `${NS}/x`, { body: big, contentType: 'application/merge-patch+json' }), 413, 'RequestEntityTooLarge', TOO_LARGE);
  });
  test('a JSON object just over the limit (a huge annotation) is refused, one just under is read', async () => {
    const obj = gitTarget('huge');
    obj.metadata.annotations = { a: 'x'.repeat(3 * 1024 * 1024) };
    status(await server.request('POST', NS, { body: obj }), 413, 'RequestEntityTooLarge', TOO_LARGE);
    // Under the body limit but over the 256 KiB annotation limit: read, then refused by validation.
    obj.metadata.annotations = { a: 'x'.repeat(300 * 1024) };
    const r = await server.request('POST', NS, { body: obj });
    status(r, 422, 'Invalid');
    assert.equal(r.body.details.causes[0].field, 'metadata.annotations');
  });
  test('a JSON patch with more than 10000 operations', async () => {
    const ops = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/spec/branch', value: 'main' }));
    status(
      await server.request('PATCH', `${NS}/mal`, { body: ops, contentType: 'application/json-patch+json' }),
      413,
      'RequestEntityTooLarge',
      'the allowed maximum operations in a JSON patch is 10000, got 10001',
    );
  });
});

describe('unsupported Content-Type → 415 UnsupportedMediaType', () => {
  test('create and update with text/plain, protobuf, form data', async () => {
    for (const ct of ['text/plain', 'application/vnd.kubernetes.protobuf', 'application/x-www-form-urlencoded', 'application/cbor']) {
      status(await server.request('POST', NS, { body: '{}', contentType: ct }), 415, 'UnsupportedMediaType', OBJ_MEDIA);
      status(await server.request('PUT', `${NS}/mal`, { body: '{}', contentType: ct }), 415, 'UnsupportedMediaType', OBJ_MEDIA);
    }
  });
  test('patch with strategic merge, text/plain, application/json', async () => {
    for (const ct of ['application/strategic-merge-patch+json', 'text/plain', 'application/json', 'application/apply-patch+cbor']) {
      status(await server.request('PATCH', `${NS}/mal`, { body: '{}', contentType: ct }), 415, 'UnsupportedMediaType', PATCH_MEDIA);
    }
  });
  test('server-side apply: a body that is not an object, or not YAML, is 400', async () => {
    const apply = (body: string) => server.request('PATCH', `${NS}/mal?fieldManager=me`, { body, contentType: 'application/apply-patch+yaml' });
    status(await apply('[1, 2]'), 400, 'BadRequest', 'the apply configuration must be a YAML or JSON object');
    status(await apply('a: [b'), 400, 'BadRequest', /^the apply configuration could not be decoded as YAML: /);
    status(await apply(''), 400, 'BadRequest', 'the request body is empty; expected an apply configuration');
  });
  test('the content type is checked before the object is looked up', async () => {
    status(await server.request('PATCH', `${NS}/missing`, { body: '{}', contentType: 'text/plain' }), 415, 'UnsupportedMediaType', PATCH_MEDIA);
  });
});

describe('stale resourceVersion → 409 Conflict', () => {
  test('update with a stale resourceVersion', async () => {
    const c = await server.request('POST', NS, { body: gitTarget('stale') });
    assert.equal(c.status, 201, c.text);
    const first = c.body;
    const u = await server.request('PUT', `${NS}/stale`, { body: { ...first, metadata: { ...first.metadata, labels: { v: '2' } } } });
    assert.equal(u.status, 200, u.text);
    assert.notEqual(u.body.metadata.resourceVersion, first.metadata.resourceVersion);
    const r = await server.request('PUT', `${NS}/stale`, { body: { ...first, metadata: { ...first.metadata, labels: { v: '3' } } } });
    status(
      r,
      409,
      'Conflict',
      'Operation cannot be fulfilled on gittargets.configbutler.ai "stale": the object has been modified; please apply your changes to the latest version and try again',
    );
    assert.deepEqual(r.body.details, { name: 'stale', group: 'configbutler.ai', kind: 'gittargets' });
  });
  test('a merge patch pinning a stale resourceVersion', async () => {
    const cur = (await server.get(`${NS}/stale`)).body;
    const stale = String(Number(cur.metadata.resourceVersion) - 1);
    status(
      await server.request('PATCH', `${NS}/stale`, { body: { metadata: { resourceVersion: stale, labels: { v: '4' } } }, contentType: 'application/merge-patch+json' }),
      409,
      'Conflict',
      'Operation cannot be fulfilled on gittargets.configbutler.ai "stale": the object has been modified; please apply your changes to the latest version and try again',
    );
  });
  test('a status update with a stale resourceVersion', async () => {
    const cur = (await server.get(`${NS}/stale`)).body;
    const stale = String(Number(cur.metadata.resourceVersion) - 1);
    status(
      await server.request('PUT', `${NS}/stale/status`, { body: { ...cur, metadata: { ...cur.metadata, resourceVersion: stale }, status: { pendingChanges: 1 } } }),
      409,
      'Conflict',
    );
  });
});

describe('unknown resources and versions → 404 Status', () => {
  const paths = [
    `${GV}/namespaces/default/widgets`,
    `${GV}/widgets`,
    `${GV}/namespaces/default/gittargets/x/scale`,
    '/apis/configbutler.ai/v9/namespaces/default/gittargets',
    '/apis/configbutler.ai/v9',
    '/apis/other.example.com/v1/namespaces/default/gittargets',
    '/apis/other.example.com',
    '/nonexistent',
    '/api/v1/namespaces',
  ];
  for (const p of paths) {
    test(`GET ${p}`, async () => {
      const r = await server.get(p);
      status(r, 404, 'NotFound', NOT_FOUND_PATH);
    });
  }
  test('POST to an unknown resource', async () => {
    status(await server.request('POST', `${GV}/namespaces/default/widgets`, { body: {} }), 404, 'NotFound', NOT_FOUND_PATH);
  });
  test('a missing object names it', async () => {
    const r = await server.get(`${NS}/missing`);
    status(r, 404, 'NotFound', 'gittargets.configbutler.ai "missing" not found');
    assert.deepEqual(r.body.details, { name: 'missing', group: 'configbutler.ai', kind: 'gittargets' });
  });
});
