// Responses over 128 KiB are gzip-compressed when the client accepts gzip, as kube-apiserver does
// (level 1); smaller ones and clients that do not ask get identity bodies. kubectl reads both.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { gitTarget, ns, pool, rawBody, startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';

const N = 400;
let server: StartedServer;
before(async () => {
  server = await startServer(['--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0']); // 400 GitTargets in one namespace: beyond the default quota
  await pool(Array.from({ length: N }, (_, i) => i), 8, async (i) => {
    const body = gitTarget(`gz-${String(i).padStart(3, '0')}`, 'gz');
    body.metadata.annotations = { note: 'x'.repeat(300) };
    const r = await server.request('POST', ns('gz'), { body });
    assert.equal(r.status, 201, r.text);
  });
});
after(() => server?.stop());

/** Raw response: status, headers and the undecoded body bytes. */
const raw = (path: string, headers: Record<string, string>) => rawBody(server, path, headers);

test('a LIST over 128 KiB is gzip-compressed when Accept-Encoding allows it; identical once decompressed', async () => {
  const plain = await raw(ns('gz'), { accept: 'application/json' });
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.ok(plain.bytes.length > 128 * 1024, `the list is only ${plain.bytes.length} bytes`);
  const gz = await raw(ns('gz'), { accept: 'application/json', 'accept-encoding': 'gzip' });
  assert.equal(gz.status, 200);
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.equal(gz.headers['vary'], 'Accept-Encoding');
  assert.equal(gz.headers['content-type'], 'application/json');
  assert.ok(gz.bytes.length < plain.bytes.length / 5, `compressed ${gz.bytes.length} of ${plain.bytes.length} bytes`);
  assert.deepEqual(JSON.parse(gunzipSync(gz.bytes).toString('utf8')), JSON.parse(plain.bytes.toString('utf8')));
  // Also with a quality list, as browsers and Go send it; not when gzip is refused (q=0).
  assert.equal((await raw(ns('gz'), { 'accept-encoding': 'deflate, gzip;q=0.8' })).headers['content-encoding'], 'gzip');
  assert.equal((await raw(ns('gz'), { 'accept-encoding': 'gzip;q=0' })).headers['content-encoding'], undefined);
});

test('small responses are not compressed even when gzip is accepted', async () => {
  const one = await raw(`${ns('gz')}/gz-000`, { accept: 'application/json', 'accept-encoding': 'gzip' });
  assert.equal(one.status, 200);
  assert.equal(one.headers['content-encoding'], undefined);
  assert.equal(JSON.parse(one.bytes.toString('utf8')).metadata.name, 'gz-000');
});

test('kubectl (which asks for gzip) lists the compressed collection', async (t) => {
  const k = new Kubectl(kubectlBinary(), server.kubeconfig);
  t.after(() => k.cleanup());
  const r = await k.run(['get', 'gittargets', '-n', 'gz', '-o', 'name', '--chunk-size=0']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').length, N);
});
