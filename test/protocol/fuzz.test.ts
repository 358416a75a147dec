// Fuzz: a few thousand random and mutated bodies, paths, query strings and headers against every
// route. No answer may be a 5xx, every error must be a Status whose code is the HTTP status, and
// the process must stay up. The PRNG is seeded with a fixed default (test/support/seed.ts), printed
// by the test; FUZZ_SEED=<n> runs another sequence or reproduces a run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { GV, gitTarget, pool, startServer, type StartedServer } from '../support/server.js';
import { seedFrom } from '../support/seed.js';
import { mulberry32 } from '../support/mulberry32.js';

const SEED = seedFrom('FUZZ_SEED');
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);


class Rand {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  string(max = 12): string {
    const alphabets = ['abcdefghijklmnopqrstuvwxyz', '0123456789', '-._~:/?#[]@!$&\'()*+,;=%', '\u00e9\u4e2d\u{1f600}\u0000\u202e\n\t"\\ '];
    let s = '';
    const n = this.int(max + 1);
    for (let i = 0; i < n; i++) s += this.pick([...this.pick(alphabets)]);
    return s;
  }
  bytes(max: number): Buffer {
    const b = Buffer.alloc(this.int(max + 1));
    for (let i = 0; i < b.length; i++) b[i] = this.int(256);
    return b;
  }
}

const NAMESPACES = ['default', 'fuzz', 'a-b', 'UPPER', '', '..', 'x'.repeat(70), '%2F', 'ns with space'];
const RESOURCES = ['gittargets', 'commitrequests', 'widgets', 'gt', 'GitTargets', ''];
const NAMES = ['demo', 'f1', 'f2', 'missing', '', '..', '%00', 'UPPER', 'a'.repeat(300), 'x.y', '-bad'];
const SUBRESOURCES = ['status', 'scale', 'status/x', ''];
const QUERY_KEYS = [
  'watch', 'labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion', 'resourceVersionMatch', 'allowWatchBookmarks',
  'timeoutSeconds', 'sendInitialEvents', 'dryRun', 'fieldManager', 'fieldValidation', 'force', 'includeObject', 'pretty',
  'propagationPolicy', 'gracePeriodSeconds', 'hash', 'verbose', 'timeout',
];
const QUERY_VALUES = [
  'true', 'false', '1', '0', '-1', '99999999999999999999', '1e3', 'All', 'Strict', 'Warn', 'Ignore', 'Loud', 'Exact', 'NotOlderThan',
  'Object', 'None', 'Metadata', 'app=demo', 'app!=x,tier in (a,b)', 'a===b', 'metadata.name=demo', 'metadata.namespace!=x',
  'spec.branch=main', 'spec.url=x', 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ', 'eyJ2IjoxfQ', '%zz', '', '(((', 'x'.repeat(200),
];
const CONTENT_TYPES = [
  'application/json', 'application/yaml', 'application/merge-patch+json', 'application/json-patch+json', 'application/apply-patch+yaml',
  'application/strategic-merge-patch+json', 'text/plain', 'application/json; charset=utf-8', 'application/vnd.kubernetes.protobuf', '',
  'multipart/form-data; boundary=x', ';;;', 'application/json;as=Table',
];
const ACCEPTS = [
  'application/json', '*/*', '', 'application/yaml', 'text/html', 'application/vnd.kubernetes.protobuf',
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json', 'application/json;as=Table;v=v1;g=meta.k8s.io',
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf',
  'application/json;as=Table;v=v9;g=meta.k8s.io', ',,,;', 'application/json;as="Table";g=', 'application/*',
];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'PATCH', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

function randomPath(r: Rand): string {
  const kind = r.int(10);
  const nonResource = ['/', '/api', '/apis', '/apis/configbutler.ai', GV, '/openapi/v2', '/openapi/v3', '/openapi/v3/apis/configbutler.ai/v1alpha1', '/version', '/healthz', '/readyz', '/livez', '/metrics', '/healthz/ping'];
  let p: string;
  if (kind === 0) p = r.pick(nonResource);
  else if (kind === 1) p = `${GV}/${r.pick(RESOURCES)}`;
  else if (kind <= 4) p = `${GV}/namespaces/${r.pick(NAMESPACES)}/${r.pick(RESOURCES)}`;
  else if (kind <= 7) p = `${GV}/namespaces/${r.pick(NAMESPACES)}/${r.pick(RESOURCES)}/${r.pick(NAMES)}`;
  else if (kind === 8) p = `${GV}/namespaces/${r.pick(NAMESPACES)}/${r.pick(RESOURCES)}/${r.pick(NAMES)}/${r.pick(SUBRESOURCES)}`;
  else p = `/${Array.from({ length: 1 + r.int(6) }, () => encodeURIComponent(r.string(8))).join('/')}`;
  if (r.chance(0.08)) p = `/clusters/${r.pick(['root', '*', 'a:b', 'UPPER', 'c1', '%2A'])}${p}`;
  if (r.chance(0.05)) p = p.replace(/\//g, '//');
  if (r.chance(0.05)) p += '/';
  if (r.chance(0.03)) p = p.replace(/[a-z]/, '%');
  return p;
}

function randomQuery(r: Rand): string {
  const n = r.int(4);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = r.chance(0.9) ? r.pick(QUERY_KEYS) : r.string(6);
    const v = r.chance(0.8) ? r.pick(QUERY_VALUES) : r.string(20);
    parts.push(r.chance(0.1) ? `${k}=${v}` : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

function randomValue(r: Rand, depth = 0): unknown {
  switch (r.int(depth > 3 ? 6 : 9)) {
    case 0: return null;
    case 1: return r.chance(0.5);
    case 2: return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308]);
    case 3: return r.string(30);
    case 4: return '';
    case 5: return r.pick(['main', 'https://example.com/r.git', '.', '../x', 'local:repo', 'file:///tmp/x.git', 'True', 'Ready']);
    case 6: return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(4); i > 0; i--) o[r.pick(['name', 'url', 'spec', 'metadata', 'status', r.string(6), '__proto__', 'constructor'])] = randomValue(r, depth + 1);
      return o;
    }
  }
}

/** Replaces, deletes or adds a random field somewhere in `obj`. */
function mutate(r: Rand, obj: any, times: number): any {
  for (let t = 0; t < times; t++) {
    let cur = obj;
    for (let d = 0; d < 4 && cur && typeof cur === 'object'; d++) {
      const keys = Object.keys(cur);
      if (keys.length === 0 || r.chance(0.3)) break;
      const k = r.pick(keys);
      if (!cur[k] || typeof cur[k] !== 'object' || r.chance(0.3)) {
        const op = r.int(3);
        if (op === 0) delete cur[k];
        else cur[k] = randomValue(r);
        cur = undefined;
        break;
      }
      cur = cur[k];
    }
    if (cur && typeof cur === 'object' && !Array.isArray(cur)) cur[r.pick(['extra', 'bogusField', r.string(5)])] = randomValue(r);
  }
  return obj;
}

function validObject(r: Rand): any {
  if (r.chance(0.8)) {
    const o = gitTarget(r.pick(['f1', 'f2', 'demo', `g${r.int(50)}`]), r.pick(['default', 'fuzz']), { labels: { app: r.pick(['demo', 'x']) } });
    if (r.chance(0.3)) o.metadata.resourceVersion = r.pick(['1', '2', '999999', 'abc', '']);
    if (r.chance(0.2)) o.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'X', lastTransitionTime: '2026-01-01T00:00:00Z' }] };
    return o;
  }
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'CommitRequest',
    metadata: { name: `c${r.int(20)}`, namespace: 'default' },
    spec: { targetRef: { name: 'demo' }, message: r.string(40) },
  };
}

function randomBody(r: Rand, method: string, contentType: string): Buffer | undefined {
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return r.chance(0.05) ? r.bytes(64) : undefined;
  const kind = r.int(12);
  if (kind === 0) return undefined;
  if (kind === 1) return r.bytes(200);
  if (kind === 2) return Buffer.from(JSON.stringify(randomValue(r)));
  if (kind === 3) {
    const s = JSON.stringify(validObject(r));
    return Buffer.from(s.slice(0, r.int(s.length)));
  }
  if (kind === 4 && contentType.includes('json-patch')) {
    const ops = Array.from({ length: 1 + r.int(4) }, () => ({
      op: r.pick(['add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus']),
      path: r.pick(['/spec/branch', '/metadata/labels/x', '/metadata/name', '/status', '/spec/resources/-', '', '/', '/a~1b', '/metadata/resourceVersion', '/kind']),
      from: r.pick(['/spec', '/metadata/labels', undefined]),
      value: randomValue(r),
    }));
    return Buffer.from(JSON.stringify(ops));
  }
  if (kind === 5) return Buffer.from(`a: [\n${r.string(30)}\n- {`);
  if (kind === 6 && r.chance(0.05)) return Buffer.alloc(3 * 1024 * 1024 + 10, 0x7b);
  if (kind === 7) return Buffer.from('{"a":'.repeat(5000) + '1' + '}'.repeat(5000));
  if (kind === 8 && method === 'DELETE') return Buffer.from(JSON.stringify({ propagationPolicy: r.pick(['Background', 'Orphan', 'X', null, 5]), dryRun: r.pick([['All'], ['x'], 'All', null]), preconditions: r.pick([{ uid: 'x' }, { resourceVersion: '1' }, null, 'x']) }));
  if (kind === 9) return Buffer.from(JSON.stringify(mutate(r, { metadata: { labels: { x: 'y' } }, spec: { suspend: true } }, 1 + r.int(3))));
  return Buffer.from(JSON.stringify(mutate(r, validObject(r), r.int(4))));
}

interface Outcome {
  status: number;
  body: string;
  contentType: string;
}

function send(server: StartedServer, method: string, path: string, headers: Record<string, string>, body: Buffer | undefined, isWatch: boolean): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { ...headers };
    if (body) h['content-length'] = String(body.length);
    const req = httpsRequest({ host: '127.0.0.1', port: server.port, method, path, headers: h, agent: server.agent }, (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      if (isWatch && res.statusCode === 200) {
        // A watch that was accepted: the status is what counts; do not wait for its timeout.
        res.destroy();
        resolve({ status: 200, body: '', contentType });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), contentType }));
      res.on('error', reject);
    });
    req.on('error', (e) => {
      // The server may answer (413) and close before the whole body was written.
      if ((e as NodeJS.ErrnoException).code === 'EPIPE' || (e as NodeJS.ErrnoException).code === 'ECONNRESET') resolve({ status: -1, body: String(e), contentType: '' });
      else reject(e);
    });
    req.end(body);
  });
}

let server: StartedServer;
before(async () => {
  server = await startServer(['--min-request-timeout', '5']);
  // Some objects for the fuzzer to hit.
  for (const n of ['demo', 'f1', 'f2']) {
    for (const namespace of ['default', 'fuzz']) {
      const r = await server.request('POST', `${GV}/namespaces/${namespace}/gittargets`, { body: gitTarget(n, namespace, { labels: { app: 'demo' } }) });
      assert.equal(r.status, 201, r.text);
    }
  }
});
after(() => server?.stop());

test(`fuzz: ${COUNT} random requests, no 5xx, process stays up (seed ${SEED})`, async (t) => {
  t.diagnostic(`FUZZ_SEED=${SEED}`);
  console.log(`fuzz seed: FUZZ_SEED=${SEED}`);
  const r = new Rand(mulberry32(SEED));
  // Generate every request up front from the seed, so concurrency cannot change what is sent.
  const cases = Array.from({ length: COUNT }, (_, i) => {
    const method = r.pick(METHODS);
    const path = randomPath(r);
    let query = randomQuery(r);
    const contentType = r.pick(CONTENT_TYPES);
    const accept = r.pick(ACCEPTS);
    const body = randomBody(r, method, contentType);
    const headers: Record<string, string> = {};
    if (accept) headers.accept = accept;
    if (body && contentType) headers['content-type'] = contentType;
    if (r.chance(0.05)) headers['if-none-match'] = r.string(10).replace(/[^\x20-\x7e]/g, '');
    const isWatch = /[?&]watch=/i.test(query);
    if (isWatch && r.chance(0.5)) query += '&timeoutSeconds=1';
    // Node's client refuses raw spaces and control characters in a request line; send them escaped.
    const full = (path + query).replace(/[^\x21-\x7e]/gu, (ch) => encodeURIComponent(ch));
    return { i, method, path: full, headers, body, isWatch };
  });
  const failures: string[] = [];
  await pool(cases, 8, async (c) => {
    const o = await send(server, c.method, c.path, c.headers, c.body, c.isWatch);
    const desc = () =>
      `#${c.i} ${c.method} ${c.path} ${JSON.stringify(c.headers)} body=${c.body ? JSON.stringify(c.body.subarray(0, 120).toString('utf8')) : '-'} → ${o.status} ${o.body.slice(0, 200)}`;
    // A resourceVersion ahead of the server is answered 504 Timeout, as kube-apiserver does.
    const futureRV = o.status === 504 && /"reason":"Timeout"/.test(o.body) && /Too large resource version/.test(o.body);
    if ((o.status >= 500 && !futureRV) || o.status === 0) failures.push(desc());
    else if (o.status >= 400 && c.method !== 'HEAD') {
      let s: any;
      try {
        s = JSON.parse(o.body);
      } catch {
        s = undefined;
      }
      if (s?.kind !== 'Status' || s.code !== o.status || s.status !== 'Failure' || !/^application\/json/.test(o.contentType)) failures.push(`not a Status: ${desc()}`);
    }
  });
  if (process.env.FUZZ_REPORT) writeFileSync(process.env.FUZZ_REPORT, failures.join('\n'));
  assert.equal(failures.length, 0, `FUZZ_SEED=${SEED}: ${failures.length} failures, the first ones:\n${failures.slice(0, 8).join('\n')}`);
  assert.ok(server.alive(), 'the server process exited');
  const health = await server.get('/healthz');
  assert.equal(health.status, 200);
  assert.equal(health.text, 'ok');
  assert.doesNotMatch(server.stderr(), /internal error/, 'the server logged internal errors');
});
