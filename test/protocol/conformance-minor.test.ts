// Smaller protocol points, each as kube-apiserver 1.37 answers it (checked against the real one;
// test/cluster/protocol-differential.test.ts compares the two side by side):
//   the deprecated /watch/ paths, Tables and PartialObjectMetadata asked for as meta.k8s.io/v1beta1,
//   OpenAPI v3 asked for as protobuf, label keys longer than 63 bytes, and escaped field selectors.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, assertStatus, gitTarget, ns, startServer, watch, type EventReader, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  server = await startServer();
  for (const [n, name] of [['lw', 'one'], ['lw', 'two'], ['lw2', 'three']] as const) {
    const r = await server.request('POST', ns(n), { body: gitTarget(name, n) });
    assert.equal(r.status, 201, r.text);
  }
});
after(() => server?.stop());

async function next(w: EventReader, what: string): Promise<any> {
  const ev = await w.next();
  assert.ok(ev, `the stream ended before ${what}`);
  return ev;
}
const names = async (w: EventReader, n: number) => {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await next(w, `event ${i + 1}`)).object.metadata.name);
  return out.sort();
};

describe('deprecated /watch/ paths (served by kube-apiserver, not by us before)', () => {
  test('/watch/namespaces/<ns>/<resource>/<name> watches that one name, from its current state, then its changes', async () => {
    const w = await watch(server, `${GV}/watch/namespaces/lw/gittargets/one`);
    try {
      const first = await next(w, 'the initial ADDED');
      assert.equal(first.type, 'ADDED');
      assert.equal(first.object.metadata.name, 'one');
      const p = await server.request('PATCH', `${ns('lw')}/two`, { contentType: 'application/merge-patch+json', body: { metadata: { labels: { x: '1' } } } });
      assert.equal(p.status, 200, p.text);
      const q = await server.request('PATCH', `${ns('lw')}/one`, { contentType: 'application/merge-patch+json', body: { metadata: { labels: { x: '2' } } } });
      assert.equal(q.status, 200, q.text);
      const ev = await next(w, 'the MODIFIED of "one"');
      assert.equal(`${ev.type} ${ev.object.metadata.name} ${ev.object.metadata.labels.x}`, 'MODIFIED one 2');
    } finally {
      w.close();
    }
  });

  test('/watch/namespaces/<ns>/<resource> and /watch/<resource> watch the collection; watch=false does not make them lists', async () => {
    const inNs = await watch(server, `${GV}/watch/namespaces/lw/gittargets?watch=false&timeoutSeconds=30`);
    const all = await watch(server, `${GV}/watch/gittargets?resourceVersion=0`);
    try {
      assert.deepEqual(await names(inNs, 2), ['one', 'two']);
      assert.deepEqual(await names(all, 3), ['one', 'three', 'two']);
    } finally {
      inNs.close();
      all.close();
    }
  });

  test('a field selector on a named watch must pin that same name (kube: 400); other methods 405, status 405 (no watch), other subresources 404', async () => {
    assertStatus(await server.get(`${GV}/watch/namespaces/lw/gittargets/one?fieldSelector=metadata.name%3Dtwo`), 400, 'BadRequest', "fieldSelector metadata.name doesn't match requested name");
    assertStatus(await server.get(`${GV}/watch/namespaces/lw/gittargets/one?fieldSelector=metadata.namespace%3Dlw`), 400, 'BadRequest', "fieldSelector metadata.name doesn't match requested name");
    const same = await watch(server, `${GV}/watch/namespaces/lw/gittargets/one?fieldSelector=metadata.name%3Done`);
    try {
      assert.equal((await next(same, 'the ADDED')).object.metadata.name, 'one');
    } finally {
      same.close();
    }
    assertStatus(await server.request('POST', `${GV}/watch/namespaces/lw/gittargets`, { body: gitTarget('x', 'lw') }), 405, 'MethodNotAllowed');
    assertStatus(await server.request('DELETE', `${GV}/watch/namespaces/lw/gittargets/one`), 405, 'MethodNotAllowed');
    assertStatus(await server.get(`${GV}/watch/namespaces/lw/gittargets/one/status`), 405, 'MethodNotAllowed', 'watch is not supported on resources of kind "gittargets.configbutler.ai"');
    assertStatus(await server.get(`${GV}/watch/namespaces/lw/gittargets/one/nothing`), 404, 'NotFound');
    assertStatus(await server.get(`${GV}/watch/namespaces/lw/nothings`), 404, 'NotFound');
    assert.equal((await server.get(`${ns('lw')}/one`)).status, 200, 'the POST and DELETE changed nothing');
  });
});

describe('meta.k8s.io/v1beta1 representations come back as v1beta1 (same shape), as kube answers', () => {
  const BETA_TABLE = 'application/json;as=Table;v=v1beta1;g=meta.k8s.io';
  test('Table of a list, of an object, and of watch events; the rows\' PartialObjectMetadata too', async () => {
    const list = await server.get(ns('lw'), { accept: BETA_TABLE });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.kind, 'Table');
    assert.equal(list.body.apiVersion, 'meta.k8s.io/v1beta1');
    assert.deepEqual(list.body.rows.map((r: any) => [r.cells[0], r.object.kind, r.object.apiVersion]), [
      ['one', 'PartialObjectMetadata', 'meta.k8s.io/v1beta1'],
      ['two', 'PartialObjectMetadata', 'meta.k8s.io/v1beta1'],
    ]);
    const one = await server.get(`${ns('lw')}/one`, { accept: BETA_TABLE });
    assert.equal(one.body.apiVersion, 'meta.k8s.io/v1beta1');
    assert.equal(one.body.rows[0].object.apiVersion, 'meta.k8s.io/v1beta1');
    const w = await watch(server, `${ns('lw')}?watch=true&fieldSelector=metadata.name%3Done`, BETA_TABLE);
    try {
      const ev = await next(w, 'the ADDED Table');
      assert.equal(`${ev.object.kind} ${ev.object.apiVersion} ${ev.object.rows[0].object.apiVersion}`, 'Table meta.k8s.io/v1beta1 meta.k8s.io/v1beta1');
    } finally {
      w.close();
    }
    // v1 stays v1.
    assert.equal((await server.get(ns('lw'), { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' })).body.apiVersion, 'meta.k8s.io/v1');
  });

  test('PartialObjectMetadata and PartialObjectMetadataList', async () => {
    const one = await server.get(`${ns('lw')}/one`, { accept: 'application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io' });
    assert.equal(`${one.body.kind} ${one.body.apiVersion}`, 'PartialObjectMetadata meta.k8s.io/v1beta1');
    const list = await server.get(ns('lw'), { accept: 'application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io' });
    assert.equal(`${list.body.kind} ${list.body.apiVersion}`, 'PartialObjectMetadataList meta.k8s.io/v1beta1');
    assert.deepEqual(list.body.items.map((i: any) => `${i.apiVersion} ${i.metadata.name}`), ['meta.k8s.io/v1beta1 one', 'meta.k8s.io/v1beta1 two']);
  });
});

describe('OpenAPI v3 asked for as protobuf', () => {
  const P = 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf';
  const path = `/openapi/v3/apis/configbutler.ai/v1alpha1`;
  test('only protobuf acceptable → 406 NotAcceptable Status (we produce no protobuf), Vary: Accept', async () => {
    for (const accept of [P, 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf']) {
      const r = await server.get(path, { accept });
      assertStatus(r, 406, 'NotAcceptable', /^only the following media types are accepted: application\/json/);
      assert.equal(r.headers['vary'], 'Accept');
    }
  });
  test('protobuf preferred but JSON acceptable → the JSON document, labelled application/json', async () => {
    for (const accept of [`${P}, application/json`, `${P}, */*`, `application/json;q=0.5, ${P}`]) {
      const r = await server.get(path, { accept });
      assert.equal(r.status, 200, `${accept}: ${r.text.slice(0, 200)}`);
      assert.equal(r.headers['content-type'], 'application/json', accept);
      assert.equal(r.body.openapi, '3.0.0', accept);
    }
  });
});

describe('label keys: name part at most 63 bytes, prefix a DNS subdomain of at most 253 (kube\'s messages)', () => {
  const REGEX_MSG = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  const create = (name: string, labels: Record<string, string>) => {
    const body = gitTarget(name, 'lk');
    body.metadata.labels = labels;
    return server.request('POST', ns('lk'), { body });
  };
  test('a 64-byte key is 422 Invalid; 63 is fine; a 254-byte prefix is refused, 253 fine; every failed rule is one cause', async () => {
    const k64 = 'a'.repeat(64);
    const r = await create('k64', { [k64]: 'x' });
    assertStatus(r, 422, 'Invalid', `GitTarget.configbutler.ai "k64" is invalid: metadata.labels: Invalid value: "${k64}": name part must be no more than 63 bytes`);
    assert.deepEqual(r.body.details.causes, [{ reason: 'FieldValueInvalid', message: `Invalid value: "${k64}": name part must be no more than 63 bytes`, field: 'metadata.labels' }]);
    assert.equal((await create('k63', { ['a'.repeat(63)]: 'x' })).status, 201);
    const p254 = `${'b'.repeat(254)}/a`;
    assertStatus(await create('p254', { [p254]: 'x' }), 422, 'Invalid', `GitTarget.configbutler.ai "p254" is invalid: metadata.labels: Invalid value: "${p254}": prefix part must be no more than 253 bytes`);
    assert.equal((await create('p253', { [`${'b'.repeat(63)}.${'b'.repeat(63)}.${'b'.repeat(63)}.${'b'.repeat(61)}/a`]: 'x' })).status, 201);
    const bad = `-${k64}`;
    const two = await create('two-rules', { [bad]: 'x' });
    assertStatus(two, 422, 'Invalid', `GitTarget.configbutler.ai "two-rules" is invalid: [metadata.labels: Invalid value: "${bad}": name part must be no more than 63 bytes, metadata.labels: Invalid value: "${bad}": ${REGEX_MSG}]`);
    assert.equal((await create('v64', { a: 'v'.repeat(64) })).body.message, `GitTarget.configbutler.ai "v64" is invalid: metadata.labels: Invalid value: "${'v'.repeat(64)}": must be no more than 63 bytes`);
    const ann = gitTarget('a64', 'lk');
    ann.metadata.annotations = { [k64]: 'x' };
    assert.equal((await server.request('POST', ns('lk'), { body: ann })).body.message, `GitTarget.configbutler.ai "a64" is invalid: metadata.annotations: Invalid value: "${k64}": name part must be no more than 63 bytes`);
  });
  test('a label selector with such a key is 400 BadRequest (it was accepted)', async () => {
    const k64 = 'a'.repeat(64);
    assertStatus(await server.get(`${ns('lk')}?labelSelector=${k64}%3Dx`), 400, 'BadRequest', `unable to parse requirement: <nil>: Invalid value: "${k64}": name part must be no more than 63 bytes`);
    assertStatus(await server.get(`${ns('lk')}?labelSelector=${'b'.repeat(254)}/a`), 400, 'BadRequest', `unable to parse requirement: <nil>: Invalid value: "${'b'.repeat(254)}/a": prefix part must be no more than 253 bytes`);
    assert.equal((await server.get(`${ns('lk')}?labelSelector=${'a'.repeat(63)}%3Dx`)).body.items.length, 1);
  });
});

describe('escaped field selectors', () => {
  test('metadata.name=\\, (and \\= and \\\\) are accepted and match nothing (no name holds them); list and watch', async () => {
    for (const fs of ['metadata.name=\\,', 'metadata.name=\\=', 'metadata.name=\\\\', 'metadata.name==a\\,b,metadata.namespace=lw']) {
      const r = await server.get(`${ns('lw')}?fieldSelector=${encodeURIComponent(fs)}`);
      assert.equal(r.status, 200, `${fs}: ${r.text}`);
      assert.deepEqual(r.body.items, [], fs);
    }
    assert.deepEqual((await server.get(`${ns('lw')}?fieldSelector=${encodeURIComponent('metadata.name!=\\,')}`)).body.items.map((i: any) => i.metadata.name), ['one', 'two']);
    const w = await watch(server, `${ns('lw')}?watch=true&timeoutSeconds=1&fieldSelector=${encodeURIComponent('metadata.name=\\,')}`);
    await w.end(15_000);
    assert.equal(w.pending(), 0);
  });
  test('what kube refuses stays refused, with its message', async () => {
    const refused: Array<[string, string]> = [
      ['metadata.name=\\a', 'invalid field selector: invalid escape sequence: \\a'],
      ['metadata.name=a=b', 'invalid field selector: unescaped character in value: 61'],
      ['metadata.name=x\\', 'invalid field selector: invalid escape sequence: \\'],
    ];
    for (const [fs, message] of refused) assertStatus(await server.get(`${ns('lw')}?fieldSelector=${encodeURIComponent(fs)}`), 400, 'BadRequest', message);
  });
});
