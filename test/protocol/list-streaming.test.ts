// LIST bodies are streamed (docs/benchmarks.md, LIST memory): items are serialized as the client takes them, so
// a list of 10,000 never sits in memory as one string. The bytes stay exactly what the buffered
// responses were (JSON.stringify of the whole list, with ?pretty JSON.stringify(list, null, 2) and a
// newline, gzip level 1) for JSON, Table, PartialObjectMetadataList, gzip and pretty, over HTTP/1.1
// and HTTP/2; a client that stops reading holds the server back (backpressure) and one that goes away
// mid-list ends it without harm. The memory figure itself is measured by bench/list-memory.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, constants as h2constants } from 'node:http2';
import { gunzipSync, gzipSync } from 'node:zlib';
import { RESOURCES } from '../../src/api/resources.js';
import { table } from '../../src/apiserver/representation.js';
import { gitTarget, ns, pool, rawBody, startServer, type StartedServer } from '../support/server.js';
import { until, withDeadline } from '../support/deadline.js';

const N = 40; // about 330 KB: over the 128 KiB gzip threshold, so the streamed path
const BIG = 160; // about 19 MB: more than socket buffers hold, so a paused client stops the server
let server: StartedServer;
let objects: any[];

before(async () => {
  server = await startServer(['--log-level=debug', '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0']); // 160 GitTargets in one namespace: beyond the default quota
  await pool(Array.from({ length: N }, (_, i) => i), 8, async (i) => {
    const body = gitTarget(`st-${String(i).padStart(3, '0')}`, 'st');
    // Non-ASCII text too: pieces are cut by characters, bytes must still come out right.
    body.metadata.annotations = { note: `é✓ "q" \\ ${'x'.repeat(8000)}` };
    const r = await server.request('POST', ns('st'), { body });
    assert.equal(r.status, 201, r.text);
  });
  await pool(Array.from({ length: BIG }, (_, i) => i), 8, async (i) => {
    const body = gitTarget(`big-${String(i).padStart(3, '0')}`, 'big');
    body.metadata.annotations = { note: 'y'.repeat(120_000) };
    const r = await server.request('POST', ns('big'), { body });
    assert.equal(r.status, 201, r.text);
  });
  objects = [];
  for (let i = 0; i < N; i++) objects.push((await server.get(`${ns('st')}/st-${String(i).padStart(3, '0')}`)).body);
});
after(() => server?.stop());

/** Raw response: status, headers and the undecoded body bytes. */
const raw = (path: string, headers: Record<string, string>) => rawBody(server, path, headers);

/** The buffered serialization the server used to send: the whole value, compact or `?pretty`. */
const buffered = (value: unknown, pretty = false) => Buffer.from(pretty ? `${JSON.stringify(value, null, 2)}\n` : JSON.stringify(value));
const rvOf = (bytes: Buffer) => JSON.parse(bytes.toString('utf8')).metadata.resourceVersion as string;
const list = (rv: string) => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTargetList', metadata: { resourceVersion: rv }, items: objects });

test('a large JSON LIST is streamed (chunked, no Content-Length) with exactly the buffered bytes; also ?pretty', async () => {
  const r = await raw(ns('st'), { accept: 'application/json' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-cache, private');
  assert.equal(r.headers['content-length'], undefined, 'a streamed body has no Content-Length');
  assert.equal(r.headers['transfer-encoding'], 'chunked');
  assert.ok(r.bytes.length > 300_000, `${r.bytes.length} bytes`);
  assert.ok(r.bytes.equals(buffered(list(rvOf(r.bytes)))), 'streamed JSON differs from JSON.stringify of the list');
  const p = await raw(`${ns('st')}?pretty=true`, { accept: 'application/json' });
  assert.ok(p.bytes.equals(buffered(list(rvOf(p.bytes)), true)), 'streamed ?pretty differs from JSON.stringify(list, null, 2)');
});

test('gzip: the same bytes as gzip level 1 of the whole body', async () => {
  const plain = await raw(ns('st'), { accept: 'application/json' });
  const gz = await raw(ns('st'), { accept: 'application/json', 'accept-encoding': 'gzip' });
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.equal(gz.headers['vary'], 'Accept-Encoding');
  assert.ok(gunzipSync(gz.bytes).equals(plain.bytes), 'decompressed body differs');
  assert.ok(gz.bytes.equals(gzipSync(plain.bytes, { level: 1 })), 'compressed bytes differ from gzip level 1 of the body');
  const gzp = await raw(`${ns('st')}?pretty=1`, { 'accept-encoding': 'gzip' });
  assert.ok(gunzipSync(gzp.bytes).equals(buffered(list(rvOf(gunzipSync(gzp.bytes))), true)));
});

test('Table (v1 and v1beta1) and PartialObjectMetadataList: the buffered bytes', async () => {
  const def = RESOURCES.find((d) => d.plural === 'gittargets')!;
  const ageCells = def.columns.map((c, i) => (c.type === 'date' ? i + 1 : -1)).filter((i) => i >= 0);
  for (const v of ['v1', 'v1beta1'] as const) {
    for (const include of ['Metadata', 'Object', 'None'] as const) {
      const r = await raw(`${ns('st')}?includeObject=${include}`, { accept: `application/json;as=Table;v=${v};g=meta.k8s.io` });
      // includeObject=None leaves the Table under 128 KiB: sent whole, as any small body.
      assert.equal(r.headers['content-length'], r.bytes.length > 128 * 1024 ? undefined : String(r.bytes.length), `Table ${v} ${include}`);
      const got = JSON.parse(r.bytes.toString('utf8'));
      const want = table(def, objects, { resourceVersion: got.metadata.resourceVersion }, include, true, `meta.k8s.io/${v}`);
      // Ages are relative to the moment of the request: take the server's.
      (want.rows as any[]).forEach((row, i) => ageCells.forEach((c) => (row.cells[c] = got.rows[i].cells[c])));
      assert.ok(r.bytes.equals(buffered(want)), `Table ${v} includeObject=${include} differs from the buffered Table`);
    }
  }
  const pom = await raw(ns('st'), { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' });
  const rv = rvOf(pom.bytes);
  const want = { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: rv }, items: objects.map((o) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata })) };
  assert.ok(pom.bytes.equals(buffered(want)), 'PartialObjectMetadataList differs');
});

test('small lists, pages and empty lists are sent whole as before (Content-Length); HEAD too', async () => {
  const page = await raw(`${ns('st')}?limit=5`, { accept: 'application/json' });
  assert.equal(page.headers['content-length'], String(page.bytes.length));
  const got = JSON.parse(page.bytes.toString('utf8'));
  assert.ok(page.bytes.equals(buffered({ ...list(got.metadata.resourceVersion), metadata: got.metadata, items: objects.slice(0, 5) })));
  const empty = await raw(ns('nothing-here'), { accept: 'application/json' });
  assert.equal(empty.bytes.toString(), `{"apiVersion":"configbutler.ai/v1alpha1","kind":"GitTargetList","metadata":{"resourceVersion":"${rvOf(empty.bytes)}"},"items":[]}`);
  const emptyPretty = await raw(`${ns('nothing-here')}?pretty=true`, { accept: 'application/json' });
  assert.ok(emptyPretty.bytes.equals(buffered(JSON.parse(empty.bytes.toString()), true)));
  const head = await server.request('HEAD', ns('st'));
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
});

test('over HTTP/2 (kubectl\'s protocol) the streamed list has the same bytes', async () => {
  const session = connect(server.url, { ca: server.ca, cert: server.cert, key: server.key });
  try {
    const bytes = await withDeadline(new Promise<Buffer>((resolve, reject) => {
      const req = session.request({ ':path': ns('st'), accept: 'application/json' });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
      req.end();
    }), 'an HTTP/2 LIST');
    assert.ok(bytes.equals(buffered(list(rvOf(bytes)))));
  } finally {
    session.close();
  }
});

test('a client that stops reading holds the list back; one that goes away mid-list ends it, and the server carries on', async () => {
  const res = await server.stream(ns('big'), { accept: 'application/json' });
  assert.equal(res.statusCode, 200);
  await withDeadline(new Promise<void>((resolve) => res.once('data', () => resolve())), 'the first bytes of the big list');
  res.pause();
  await new Promise((r) => setTimeout(r, 1500));
  res.destroy();
  let line: any;
  await until(() => {
    const m = server.stderr().split('\n').find((l) => l.includes('a LIST ended before its body was sent'));
    if (m) line = JSON.parse(m);
    return Boolean(m);
  }, 'the server to notice the client went away');
  assert.equal(line.items, BIG);
  assert.ok(line.serialized < BIG, `the server serialized ${line.serialized} of ${BIG} items for a client that stopped reading`);
  // The same over HTTP/2: the client cancels its stream after the first bytes.
  const session = connect(server.url, { ca: server.ca, cert: server.cert, key: server.key });
  try {
    await withDeadline(new Promise<void>((resolve, reject) => {
      const req = session.request({ ':path': ns('big'), accept: 'application/json' });
      req.once('data', () => {
        req.close(h2constants.NGHTTP2_CANCEL);
        resolve();
      });
      req.on('error', reject);
      req.end();
    }), 'the first bytes of the big list over HTTP/2');
  } finally {
    session.close();
  }
  await until(() => server.stderr().split('\n').filter((l) => l.includes('a LIST ended before its body was sent')).length >= 2, 'the server to notice the HTTP/2 stream was cancelled');
  // No crash, no error logged, and the same list is served whole afterwards.
  assert.equal(server.alive(), true);
  assert.doesNotMatch(server.stderr(), /"level":"error"/);
  const full = await raw(ns('big'), { accept: 'application/json' });
  assert.equal(JSON.parse(full.bytes.toString('utf8')).items.length, BIG);
});
