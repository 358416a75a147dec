// Transport, health, discovery and OpenAPI over HTTPS (those that apply to
// a direct client; authentication items belong to the auth suite).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect } from 'node:tls';
import { GV, startServer, type StartedServer } from '../support/server.js';
import { readFileSync } from 'node:fs';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';

let server: StartedServer;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const AGG_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const AGG_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

describe('A. transport, health, generic errors', () => {
  for (const p of ['/healthz', '/readyz', '/livez']) {
    test(`1: ${p} without credentials → 200 text/plain "ok"`, async () => {
      const r = await server.request('GET', p, { anonymous: true });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(r.text, 'ok');
    });
  }
  test('1: /readyz?verbose lists the checks', async () => {
    const r = await server.request('GET', '/readyz?verbose', { anonymous: true });
    assert.equal(r.status, 200);
    assert.match(r.text, /^\[\+\]ping ok\n/);
    assert.match(r.text, /\[\+\]storage ok\n/);
    assert.match(r.text, /readyz check passed\n$/);
  });
  test('2: TLS without a client certificate succeeds; the serving certificate names the in-cluster Service', async () => {
    const sans = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port: server.port, ca: server.ca, servername: 'localhost' }, () => {
        const cert = s.getPeerCertificate();
        s.end();
        resolve(String(cert.subjectaltname));
      });
      s.on('error', reject);
    });
    assert.match(sans, /DNS:reverser-apiserver\.reverser-system\.svc(,|$)/);
    assert.match(sans, /IP Address:127\.0\.0\.1/);
  });
  test('3: an unknown path → 404 NotFound Status', async () => {
    const r = await server.get('/nonexistent');
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', code: 404, details: {} });
  });
  test('4: POST to the all-namespaces path of a namespaced resource → 405 MethodNotAllowed', async () => {
    const r = await server.request('POST', `${GV}/gittargets`, { body: {} });
    assert.equal(r.status, 405);
    assert.deepEqual(r.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'the server does not allow this method on the requested resource',
      reason: 'MethodNotAllowed',
      code: 405,
      details: {},
    });
  });
  test('5: /version → major, minor, gitVersion', async () => {
    const r = await server.get('/version');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    // The Kubernetes API level served, with the server's own version in the build metadata (as kcp).
    const own = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version;
    assert.equal(r.body.major, '1');
    assert.equal(r.body.minor, '33');
    assert.equal(r.body.gitVersion, `v1.33.0+reverser-apiserver-v${own}`);
  });
  test('5: kubectl version (on PATH and 1.33) prints no version-skew warning', async (t) => {
    for (const version of [undefined, '1.33']) {
      const k = new Kubectl(kubectlBinary(version), server.kubeconfig);
      t.after(() => k.cleanup());
      const r = await k.run(['version', '-o', 'json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '', `kubectl ${version ?? '(PATH)'} warned`);
      assert.equal(JSON.parse(r.stdout).serverVersion.gitVersion.startsWith('v1.33.0+reverser-apiserver-v'), true);
    }
  });
});

describe('B. discovery', () => {
  test('6: /api → an empty APIVersions', async () => {
    const r = await server.get('/api', { accept: 'application/json' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { kind: 'APIVersions', versions: [], serverAddressByClientCIDRs: [] });
  });
  for (const accept of ['application/json', undefined]) {
    test(`7: /apis with Accept ${accept ?? '(none)'} → APIGroupList`, async () => {
      const r = await server.get('/apis', accept ? { accept } : {});
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(r.body.kind, 'APIGroupList');
      assert.equal(r.body.groups.length, 1);
      assert.equal(r.body.groups[0].name, 'configbutler.ai');
      assert.deepEqual(r.body.groups[0].preferredVersion, { groupVersion: 'configbutler.ai/v1alpha1', version: 'v1alpha1' });
    });
  }
  test('8, 11: aggregated discovery v2 with fallbacks, echoing the parameters in Content-Type', async () => {
    const r = await server.get('/apis', { accept: `${AGG_V2},${AGG_V2BETA1},application/json` });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], AGG_V2);
    assert.equal(r.body.kind, 'APIGroupDiscoveryList');
    assert.equal(r.body.apiVersion, 'apidiscovery.k8s.io/v2');
    const [group] = r.body.items;
    assert.equal(group.metadata.name, 'configbutler.ai');
    const [version] = group.versions;
    assert.equal(version.version, 'v1alpha1');
    assert.equal(version.freshness, 'Current');
    const gt = version.resources.find((x: any) => x.resource === 'gittargets');
    assert.deepEqual(gt.responseKind, { group: 'configbutler.ai', version: 'v1alpha1', kind: 'GitTarget' });
    assert.equal(gt.scope, 'Namespaced');
    assert.equal(gt.singularResource, 'gittarget');
    assert.deepEqual([...gt.verbs].sort(), VERBS);
    assert.deepEqual(gt.shortNames, ['gt']);
    assert.deepEqual(gt.categories, ['gitops']);
    assert.equal(gt.subresources.length, 1);
    assert.equal(gt.subresources[0].subresource, 'status');
    assert.deepEqual([...gt.subresources[0].verbs].sort(), ['get', 'patch', 'update']);
    const cr = version.resources.find((x: any) => x.resource === 'commitrequests');
    assert.equal(cr.responseKind.kind, 'CommitRequest');
    // The create-only review: one verb, no status subresource.
    const scan = version.resources.find((x: any) => x.resource === 'repositoryscans');
    assert.deepEqual(scan.verbs, ['create']);
    assert.equal(scan.subresources, undefined);
  });
  test('9: only v2beta1 plus JSON → v2beta1', async () => {
    const r = await server.get('/apis', { accept: `${AGG_V2BETA1},application/json` });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], AGG_V2BETA1);
    assert.equal(r.body.apiVersion, 'apidiscovery.k8s.io/v2beta1');
  });
  test('10: the aggregator form without a fallback → aggregated v2', async () => {
    const r = await server.get('/apis', { accept: AGG_V2 });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], AGG_V2);
  });
  test('12: If-None-Match with the ETag → 304, empty body', async () => {
    const r = await server.get('/apis', { accept: AGG_V2 });
    const etag = String(r.headers.etag);
    assert.match(etag, /^"[0-9A-F]+"$/);
    const again = await server.get('/apis', { accept: AGG_V2, 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
  });
  test('13: /apis/configbutler.ai → APIGroup', async () => {
    const r = await server.get('/apis/configbutler.ai');
    assert.equal(r.status, 200);
    assert.equal(r.body.kind, 'APIGroup');
    assert.equal(r.body.name, 'configbutler.ai');
    assert.deepEqual(r.body.versions, [{ groupVersion: 'configbutler.ai/v1alpha1', version: 'v1alpha1' }]);
  });
  test('14: /apis/configbutler.ai/v1alpha1 → APIResourceList', async () => {
    const r = await server.get(GV);
    assert.equal(r.status, 200);
    assert.equal(r.body.kind, 'APIResourceList');
    assert.equal(r.body.groupVersion, 'configbutler.ai/v1alpha1');
    const byName = Object.fromEntries(r.body.resources.map((x: any) => [x.name, x]));
    assert.deepEqual(Object.keys(byName).sort(), ['commitrequests', 'commitrequests/status', 'gittargets', 'gittargets/status', 'repositoryscans']);
    assert.deepEqual(byName.repositoryscans.verbs, ['create']);
    assert.equal(byName.repositoryscans.storageVersionHash, undefined, 'a review is never stored');
    const gt = byName.gittargets;
    assert.equal(gt.namespaced, true);
    assert.equal(gt.kind, 'GitTarget');
    assert.equal(gt.singularName, 'gittarget');
    assert.deepEqual(gt.shortNames, ['gt']);
    assert.deepEqual([...gt.verbs].sort(), VERBS);
    assert.deepEqual([...byName['gittargets/status'].verbs].sort(), ['get', 'patch', 'update']);
  });
  test('17: an unknown version → 404', async () => {
    const r = await server.get('/apis/configbutler.ai/v9');
    assert.equal(r.status, 404);
    assert.equal(r.body.reason, 'NotFound');
  });
});

describe('C. OpenAPI', () => {
  let relative = '';
  test('21: /openapi/v3 lists only the served group-version', async () => {
    const r = await server.get('/openapi/v3');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body.paths), ['apis/configbutler.ai/v1alpha1']);
    relative = r.body.paths['apis/configbutler.ai/v1alpha1'].serverRelativeURL;
    assert.match(relative, /^\/openapi\/v3\/apis\/configbutler\.ai\/v1alpha1\?hash=[0-9A-F]+$/);
  });
  test('22, 23: the group-version document: GVK extensions, PATCH parameters and media types', async () => {
    const r = await server.get(relative, { accept: 'application/json' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.match(r.body.openapi, /^3\./);
    const schemas = Object.values(r.body.components.schemas) as any[];
    assert.ok(schemas.some((s) => JSON.stringify(s['x-kubernetes-group-version-kind']) === JSON.stringify([{ group: 'configbutler.ai', kind: 'GitTarget', version: 'v1alpha1' }]) || JSON.stringify(s['x-kubernetes-group-version-kind']) === JSON.stringify([{ group: 'configbutler.ai', version: 'v1alpha1', kind: 'GitTarget' }])));
    const item = r.body.paths['/apis/configbutler.ai/v1alpha1/namespaces/{namespace}/gittargets/{name}'];
    assert.ok(item, Object.keys(r.body.paths).join('\n'));
    const gvk = item.patch['x-kubernetes-group-version-kind'];
    assert.ok(gvk && !Array.isArray(gvk) && gvk.kind === 'GitTarget', JSON.stringify(gvk));
    const params = [...(item.parameters ?? []), ...(item.patch.parameters ?? [])].map((p: any) => (p.$ref ? p.$ref.split('/').pop() : `${p.name}:${p.in}`));
    assert.ok(params.some((p: string) => /fieldValidation/i.test(p)), params.join(', '));
    const media = Object.keys(item.patch.requestBody.content).sort();
    assert.deepEqual(media, ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json']);
  });
  test('24: a wrong hash → 301 to the current URL', async () => {
    const r = await server.get('/openapi/v3/apis/configbutler.ai/v1alpha1?hash=WRONG');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, relative);
  });
  test('25: /openapi/v2 as JSON: Swagger 2.0 with GVK extensions', async () => {
    const r = await server.get('/openapi/v2', { accept: 'application/json' });
    assert.equal(r.status, 200);
    assert.equal(r.body.swagger, '2.0');
    const defs = Object.values(r.body.definitions) as any[];
    assert.ok(defs.some((d) => (d['x-kubernetes-group-version-kind'] ?? []).some((g: any) => g.kind === 'GitTarget' && g.group === 'configbutler.ai')));
  });
  test('26: /openapi/v2 as protobuf (kubectl 1.27/1.28) with the dotted content type', async () => {
    const r = await server.get('/openapi/v2', { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    assert.ok(r.text.length > 100);
    assert.equal(r.body, undefined, 'protobuf, not JSON');
  });
});
