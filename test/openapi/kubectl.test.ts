// Real kubectl against the OpenAPI documents: a minimal HTTP server of this test's own serves
// discovery and the OpenAPI endpoints, and `kubectl explain` of kubectl 1.27 (reads /openapi/v2
// protobuf) and 1.33 (reads /openapi/v3) must render GitTarget fields from them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { GROUP, GROUP_VERSION, RESOURCES, VERSION } from '../../src/api/resources.js';
import { V2_PROTOBUF_CONTENT_TYPE, buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';

const docs = buildOpenAPIDocuments(RESOURCES, { title: 'reverser-apiserver', version: 'v0.1.0' });
const ownGV = docs.v3GroupVersions.get(`apis/${GROUP}/${VERSION}`)!;

function kubectlDir(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'kubectl');
    if (dir && existsSync(p)) return dirname(realpathSync(p));
  }
  throw new Error('kubectl not found on PATH');
}

const discovery: Record<string, unknown> = {
  '/apis': {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [{ name: GROUP, versions: [{ groupVersion: GROUP_VERSION, version: VERSION }], preferredVersion: { groupVersion: GROUP_VERSION, version: VERSION } }],
  },
  [`/apis/${GROUP}`]: {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: GROUP,
    versions: [{ groupVersion: GROUP_VERSION, version: VERSION }],
    preferredVersion: { groupVersion: GROUP_VERSION, version: VERSION },
  },
  [`/apis/${GROUP_VERSION}`]: {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: GROUP_VERSION,
    resources: RESOURCES.flatMap((r) => [
      {
        name: r.plural,
        singularName: r.singular,
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
        shortNames: r.shortNames,
        categories: r.categories,
      },
      { name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] },
    ]),
  },
};

function send(res: ServerResponse, code: number, type: string, body: Buffer | string, etag?: string): void {
  const headers: Record<string, string> = { 'Content-Type': type };
  if (etag) headers.ETag = etag;
  res.writeHead(code, headers).end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, seen: string[], body: string): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const accept = req.headers.accept ?? '';
  seen.push(`${req.method} ${url.pathname}${url.search} ${accept}`);
  const json = (v: unknown) => send(res, 200, 'application/json', JSON.stringify(v));
  // Stand-in for a create: echo the object, so kubectl's request (query, body) can be checked.
  if (req.method === 'POST' && url.pathname === `/apis/${GROUP_VERSION}/namespaces/default/gittargets`) {
    return send(res, 201, 'application/json', body);
  }
  if (url.pathname in discovery) return json(discovery[url.pathname]);
  if (url.pathname === '/openapi/v2') {
    if (accept.includes('com.github.proto-openapi.spec.v2')) return send(res, 200, V2_PROTOBUF_CONTENT_TYPE, docs.v2Protobuf.body, docs.v2Protobuf.etag);
    return send(res, 200, 'application/json', docs.v2Json.body, docs.v2Json.etag);
  }
  if (url.pathname === '/openapi/v3') return send(res, 200, 'application/json', docs.v3Root.body, docs.v3Root.etag);
  if (url.pathname === `/openapi/v3/${ownGV.path}`) {
    return send(res, 200, 'application/json', ownGV.body, ownGV.etag);
  }
  // Aggregated API servers may answer /api with 404; client-go tolerates it.
  send(
    res,
    404,
    'application/json',
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 }),
  );
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

test('kubectl 1.27 and 1.33 explain and create against the OpenAPI documents', async (t) => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, seen, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const dir = mkdtempSync(join(tmpdir(), 'openapi-kubectl-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { port } = server.address() as AddressInfo;
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: test, cluster: {server: "http://127.0.0.1:' + port + '"}}]',
      'users: [{name: test, user: {token: dummy}}]',
      'contexts: [{name: test, context: {cluster: test, user: test, namespace: default}}]',
      'current-context: test',
      '',
    ].join('\n'),
  );
  const env = { PATH: process.env.PATH, HOME: dir, KUBECONFIG: kubeconfig };
  const bins = kubectlDir();

  const explain = async (version: string, extra: string[] = []) => {
    seen.length = 0;
    const args = ['explain', 'gittarget.spec.repository', ...extra, '--cache-dir', join(dir, `cache-${version}`), '--kubeconfig', kubeconfig];
    const r = await run(join(bins, `kubectl.${version}`), args, env);
    assert.equal(r.stderr, '', `stderr; requests:\n${seen.join('\n')}`);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^KIND:\s+GitTarget$/m);
    assert.match(r.stdout, /The Git repository to write to\. Immutable\./);
    assert.match(r.stdout, /url\s+<string> -required-/);
    assert.match(r.stdout, /Repository URL: https:\/\/, http:\/\//);
    assert.match(r.stdout, /secretRef\s+<Object>/);
    return r.stdout;
  };

  // kubectl 1.27/1.28 fetch /openapi/v2 as protobuf before anything else; ≥ 1.29 only read v3.
  await t.test('kubectl 1.27 (OpenAPI v3 renderer, after the v2 protobuf download)', async () => {
    const out = await explain('1.27');
    assert.match(out, /^FIELD:\s+repository <Object>$/m);
    assert.match(out, /^VERSION:\s+v1alpha1$/m);
    assert.ok(seen.some((s) => /^GET \/openapi\/v2(\?\S*)? application\/com\.github\.proto-openapi\.spec\.v2@v1\.0\+protobuf/.test(s)), seen.join('\n'));
  });
  await t.test('kubectl 1.27 --output=plaintext-openapiv2 (renders the v2 protobuf document)', async () => {
    const out = await explain('1.27', ['--output=plaintext-openapiv2']);
    assert.match(out, /^RESOURCE:\s+repository <Object>$/m);
    assert.match(out, /^VERSION:\s+configbutler\.ai\/v1alpha1$/m);
  });
  await t.test('kubectl 1.33', async () => {
    const out = await explain('1.33');
    assert.match(out, /^FIELD:\s+repository <Object>$/m);
    assert.ok(seen.some((s) => s.startsWith(`GET /openapi/v3/${ownGV.path}?hash=${ownGV.hash}`)), seen.join('\n'));
    assert.ok(!seen.some((s) => s.startsWith('GET /openapi/v2')), seen.join('\n'));
  });

  // The PATCH operation lists fieldValidation, so kubectl leaves unknown-field checks to the server:
  // an unknown field must reach the server (with fieldValidation=Strict) instead of failing locally.
  const manifest = join(dir, 'gt.yaml');
  writeFileSync(
    manifest,
    'apiVersion: configbutler.ai/v1alpha1\nkind: GitTarget\nmetadata: {name: gt1}\nspec: {repository: {url: "https://example.com/r.git"}, branch: main, path: ".", bogusField: 1}\n',
  );
  for (const version of ['1.27', '1.33']) {
    await t.test(`kubectl ${version} create --dry-run=server delegates field validation to the server`, async () => {
      seen.length = 0;
      const args = ['create', '-f', manifest, '--dry-run=server', '-o', 'name', '--cache-dir', join(dir, `cache-${version}`), '--kubeconfig', kubeconfig];
      const r = await run(join(bins, `kubectl.${version}`), args, env);
      assert.equal(r.stderr, '', `stderr; requests:\n${seen.join('\n')}`);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, 'gittarget.configbutler.ai/gt1\n');
      const post = seen.find((s) => s.startsWith('POST '));
      assert.ok(post, seen.join('\n'));
      const query = new URLSearchParams(post.split(' ')[1].split('?')[1]);
      assert.equal(query.get('fieldValidation'), 'Strict');
      assert.equal(query.get('dryRun'), 'All');
    });
  }
});
