// The fixture's audit webhook, and the audit policy and webhook kubeconfig we ship (apiservice/audit/),
// against the real kube-apiserver: it starts with them and posts audit.k8s.io/v1 EventLists in batch
// mode, over mTLS with the fixture's audit client certificate, to a plain HTTPS receiver here. Only
// writes arrive (ResponseComplete, RequestResponse, with the resourceVersion they produced); reads,
// Secrets and TokenReviews never leave kube-apiserver.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { issueServerCert, makeCA } from '../support/pki.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { startRelay, type Relay } from './relay.js';

interface Post {
  path: string;
  method: string;
  contentType: string;
  clientCN: string;
  at: number;
  body: { kind: string; apiVersion: string; items: any[] };
}

let cp: ControlPlane;
let relay: Relay;
let receiver: Server;
const posts: Post[] = [];
const kubectls: Kubectl[] = [];
const NS = 'audit-probe';

function ok(r: RunResult): string {
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}
const events = () => posts.flatMap((p) => p.body.items);
const ofConfigMap = (name: string) => events().filter((e) => e.objectRef?.resource === 'configmaps' && e.objectRef?.name === name);

before(async () => {
  const serverCA = makeCA('audit-receiver-ca');
  const serving = issueServerCert(serverCA, 'audit-receiver.test', ['audit-receiver.test'], []);
  // Nothing listens yet: the relay resets kube-apiserver's first posts (they are retried).
  relay = await startRelay();
  cp = await startControlPlane({ audit: { port: relay.port, serverCAPem: serverCA.certPem, serverName: 'audit-receiver.test' } });
  receiver = createServer({ cert: serving.certPem, key: serving.keyPem, ca: cp.audit!.ca.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({
        path: req.url ?? '', method: req.method ?? '', contentType: String(req.headers['content-type']),
        clientCN: String((req.socket as TLSSocket).getPeerCertificate().subject?.CN),
        at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  relay.to((receiver.address() as AddressInfo).port);
  const admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  kubectls.push(admin);
  ok(await admin.run(['create', 'namespace', NS]));
  ok(await admin.run(['-n', NS, 'create', 'rolebinding', 'alice-edit', '--clusterrole=edit', '--user=alice']));
});

after(async () => {
  for (const k of kubectls) k.cleanup();
  await cp?.stop();
  await relay?.close();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
});

test('kube-apiserver posts an EventList for alice\'s create within the batch wait, with the resourceVersion it produced', { timeout: 120_000 }, async () => {
  const alice = new Kubectl(kubectlBinary(), cp.user('alice').kubeconfig);
  kubectls.push(alice);
  const t0 = Date.now();
  const rv = ok(await alice.run(['-n', NS, 'create', 'configmap', 'probe', '--from-literal=k=v', '-o', 'jsonpath={.metadata.resourceVersion}']));
  await until('the audit event of the create', () => ofConfigMap('probe').length > 0, 30_000, 50);
  const post = posts.find((p) => p.body.items.some((e) => e.objectRef?.name === 'probe'))!;
  // Batch mode waits at most --audit-webhook-batch-max-wait (1 s); a loaded machine adds a little.
  assert.ok(post.at - t0 < 6000, `arrived after ${post.at - t0} ms`);
  assert.equal(post.method, 'POST');
  // client-go adds the request timeout as a query: the endpoint must accept it.
  assert.equal(post.path, '/audit-webhook?timeout=30s');
  assert.equal(post.contentType, 'application/json');
  assert.equal(post.clientCN, 'kube-apiserver-audit');
  assert.equal(post.body.kind, 'EventList');
  assert.equal(post.body.apiVersion, 'audit.k8s.io/v1');
  const [e, ...more] = ofConfigMap('probe');
  assert.deepEqual(more, [], 'one event: the policy omits every stage but ResponseComplete');
  assert.equal(e.stage, 'ResponseComplete');
  assert.equal(e.level, 'RequestResponse');
  assert.equal(e.verb, 'create');
  assert.equal(e.user.username, 'alice');
  assert.deepEqual(e.objectRef, { resource: 'configmaps', namespace: NS, name: 'probe', apiVersion: 'v1' });
  assert.equal(e.responseStatus.code, 201);
  assert.equal(e.responseObject.metadata.resourceVersion, rv);
  assert.equal(e.responseObject.metadata.managedFields, undefined, 'omitManagedFields');
});

test('an impersonated update names the impersonated user; its request and response resourceVersions differ', { timeout: 120_000 }, async () => {
  const admin = kubectls[0];
  const before = ok(await admin.run(['-n', NS, 'get', 'configmap', 'probe', '-o', 'jsonpath={.metadata.resourceVersion}']));
  const after = ok(await admin.run(['-n', NS, '--as', 'alice', 'patch', 'configmap', 'probe', '-p', '{"data":{"k":"w"}}', '-o', 'jsonpath={.metadata.resourceVersion}']));
  await until('the audit event of the patch', () => ofConfigMap('probe').some((e) => e.verb === 'patch'), 30_000, 50);
  const e = ofConfigMap('probe').find((x) => x.verb === 'patch');
  assert.equal(e.user.username, 'test-admin');
  assert.equal(e.impersonatedUser.username, 'alice');
  assert.equal(e.responseObject.metadata.resourceVersion, after);
  assert.notEqual(before, after);
});

test('reads, Secrets and TokenReviews are never posted', { timeout: 120_000 }, async () => {
  const admin = kubectls[0];
  ok(await admin.run(['-n', NS, 'get', 'configmap', 'probe']));
  ok(await admin.run(['-n', NS, 'create', 'secret', 'generic', 'hush', '--from-literal=password=s3cret']));
  ok(await admin.run(['-n', NS, 'create', 'serviceaccount', 'robot']));
  ok(await admin.run(['-n', NS, 'create', 'token', 'robot']));
  // A marker written last: once its event is here, everything before it has been posted too.
  ok(await admin.run(['-n', NS, 'create', 'configmap', 'marker']));
  await until('the marker\'s audit event', () => ofConfigMap('marker').length > 0, 30_000, 50);
  const all = events();
  assert.deepEqual(all.filter((e) => ['get', 'list', 'watch'].includes(e.verb)).map((e) => e.requestURI), []);
  assert.deepEqual(all.filter((e) => e.objectRef?.resource === 'secrets').map((e) => e.requestURI), []);
  assert.deepEqual(all.filter((e) => e.objectRef?.apiGroup === 'authentication.k8s.io' || e.objectRef?.subresource === 'token').map((e) => e.requestURI), []);
  assert.ok(!JSON.stringify(all).includes('s3cret'), 'no Secret data in any audit post');
  assert.ok(all.some((e) => e.objectRef?.resource === 'serviceaccounts' && e.objectRef?.name === 'robot' && e.verb === 'create'));
  assert.deepEqual([...new Set(all.map((e) => e.stage))], ['ResponseComplete']);
});
