// Delegated authentication and authorization against a test double of the hosting cluster:
// the exact JSON sent, caching within TTLs, fail-closed on 500 and timeouts, ConfigMap CA rotation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { startFakeHostingCluster, FAKE_SA_TOKEN, type FakeHostingCluster } from '../support/fake-hosting-cluster.js';
import { issueClientCert, makeCA } from '../support/pki.js';
import { buildAuthentication } from '../../src/auth/authentication.js';
import { buildAuthorization } from '../../src/auth/authorization.js';
import { DelegatedAuthorizer, AuthorizationUnavailableError } from '../../src/auth/delegated.js';
import { HostingClient } from '../../src/auth/hosting.js';
import { checkAssertAuthor } from '../../src/auth/assert-author.js';
import type { Attributes, AuthnRequest, UserInfo } from '../../src/auth/types.js';
import type { AuthnOptions } from '../../src/auth/options.js';
import { ManualClock } from '../support/clock.js';

const quiet = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function fakeCluster(t: { after(fn: () => unknown): void }): Promise<FakeHostingCluster> {
  const fake = await startFakeHostingCluster();
  t.after(() => fake.close());
  return fake;
}

const alice: UserInfo = { username: 'alice', uid: 'u-alice', groups: ['devs', 'system:authenticated'],
  extra: { 'configbutler.ai/claims/email': ['alice@example.com'] } };
const getDemo: Attributes = { user: alice, verb: 'get', resourceRequest: true, namespace: 'team-a', apiGroup: 'configbutler.ai',
  apiVersion: 'v1alpha1', resource: 'gittargets', name: 'demo' };

test('SubjectAccessReview JSON is exact for an ordinary request and for assert-author', async (t) => {
  const fake = await fakeCluster(t);
  fake.onSAR = () => ({ allowed: true });
  const client = await HostingClient.create({ kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 2000 });
  const authz = new DelegatedAuthorizer(client, { allowTTLMs: 10_000, denyTTLMs: 10_000 }, true);
  t.after(() => authz.close());

  assert.equal((await authz.authorize(getDemo)).decision, 'allow');
  assert.equal(fake.sars()[0]!.raw,
    '{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":'
    + '{"namespace":"team-a","verb":"get","group":"configbutler.ai","version":"v1alpha1","resource":"gittargets","name":"demo"},'
    + '"user":"alice","groups":["devs","system:authenticated"],"extra":{"configbutler.ai/claims/email":["alice@example.com"]},"uid":"u-alice"}}');
  assert.equal(fake.sars()[0]!.authorization, `Bearer ${FAKE_SA_TOKEN}`);
  assert.equal(fake.sars()[0]!.path, '/apis/authorization.k8s.io/v1/subjectaccessreviews');

  fake.onSAR = () => ({ allowed: false });
  const r = await checkAssertAuthor(authz, alice, 'team-a', 'tenants');
  assert.equal(r.allowed, false);
  assert.equal(fake.sars()[1]!.raw,
    '{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":'
    + '{"namespace":"team-a","verb":"assert-author","group":"configbutler.ai","version":"v1alpha1","resource":"gittargets","name":"tenants"},'
    + '"user":"alice","groups":["devs","system:authenticated"],"extra":{"configbutler.ai/claims/email":["alice@example.com"]},"uid":"u-alice"}}');
  assert.ok(!r.allowed && r.message.includes('User "alice" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"'));
  assert.ok(!r.allowed && r.message.includes('resourceNames: ["tenants"], verbs: ["assert-author"]'));

  // Subresource, cluster-wide list, non-resource path, and a kcp workspace.
  fake.onSAR = () => ({ allowed: true });
  await authz.authorize({ ...getDemo, user: { username: 'bob', groups: [] }, verb: 'patch', subresource: 'status' });
  assert.deepEqual((fake.sars()[2]!.body as { spec: unknown }).spec,
    { resourceAttributes: { namespace: 'team-a', verb: 'patch', group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets', subresource: 'status', name: 'demo' }, user: 'bob' });
  await authz.authorize({ user: alice, verb: 'get', resourceRequest: false, path: '/metrics' });
  assert.deepEqual((fake.sars()[3]!.body as { spec: { nonResourceAttributes: unknown } }).spec.nonResourceAttributes, { path: '/metrics', verb: 'get' });
  await authz.authorize({ ...getDemo, cluster: 'root:team' });
  assert.equal(fake.sars()[4]!.path, '/clusters/root%3Ateam/apis/authorization.k8s.io/v1/subjectaccessreviews');
});

test('SubjectAccessReview answers are cached for their TTLs; errors are not cached and deny', async (t) => {
  const fake = await fakeCluster(t);
  const client = await HostingClient.create({ kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 300 });
  // The TTLs run on a manual clock: each is checked one millisecond before and at its expiry.
  const clock = new ManualClock();
  const authz = new DelegatedAuthorizer(client, { allowTTLMs: 150, denyTTLMs: 400, now: clock.now }, true);
  t.after(() => authz.close());

  fake.onSAR = (spec) => ({ allowed: spec.user === 'alice' });
  const bobGet = { ...getDemo, user: { username: 'bob', groups: ['system:authenticated'] } };
  assert.equal((await authz.authorize(getDemo)).decision, 'allow');
  assert.equal((await authz.authorize(bobGet)).decision, 'noopinion');
  await Promise.all([authz.authorize(getDemo), authz.authorize(bobGet), authz.authorize(getDemo)]);
  assert.equal(fake.sars().length, 2, 'cached decisions are not re-asked within their TTL');
  clock.advance(149);
  await authz.authorize(getDemo);
  await authz.authorize(bobGet);
  assert.equal(fake.sars().length, 2, 'an allow is cached until its TTL (150 ms) has passed');
  clock.advance(1); // allow TTL (150 ms) expired, deny TTL (400 ms) not
  await authz.authorize(getDemo);
  await authz.authorize(bobGet);
  assert.equal(fake.sars().length, 3);
  assert.equal((fake.sars()[2]!.body as { spec: { user: string } }).spec.user, 'alice');
  clock.advance(249); // 399 ms after the deny
  await authz.authorize(bobGet);
  assert.equal(fake.sars().length, 3, 'a deny is cached until its TTL (400 ms) has passed');
  clock.advance(1);
  await authz.authorize(bobGet);
  assert.equal(fake.sars().length, 4);
  assert.equal((fake.sars()[3]!.body as { spec: { user: string } }).spec.user, 'bob');

  // HTTP 500: an error (the caller denies), and the next request asks again.
  fake.onSAR = () => ({ status: 500 });
  const carol = { ...getDemo, user: { username: 'carol', groups: [] } };
  await assert.rejects(authz.authorize(carol), (e: Error) => e instanceof AuthorizationUnavailableError && /HTTP 500/.test(e.message));
  await assert.rejects(authz.authorize(carol), AuthorizationUnavailableError);
  assert.equal(fake.sars().length, 6);
  const denied500 = await checkAssertAuthor(authz, carol.user, 'team-a', 'tenants');
  assert.ok(!denied500.allowed && /the authorization check could not be made: SubjectAccessReview failed: .*HTTP 500/.test(denied500.message));

  // A SubjectAccessReview that never answers times out and denies.
  fake.onSAR = () => 'hang';
  const started = Date.now();
  const denied = await checkAssertAuthor(authz, carol.user, 'team-a', 'tenants');
  assert.ok(Date.now() - started < 2000);
  assert.ok(!denied.allowed && /could not be made: SubjectAccessReview failed: .*no answer within 0.3s/.test(denied.message), !denied.allowed ? denied.message : '');

  // allowed and denied together is an error, not an allow.
  fake.onSAR = () => ({ allowed: true, denied: true });
  await assert.rejects(authz.authorize({ ...getDemo, user: { username: 'dave', groups: [] } }), /both allowed and denied/);
});

test('buildAuthorization Delegated: system:masters and always-allowed paths never reach the hosting cluster', async (t) => {
  const fake = await fakeCluster(t);
  fake.onSAR = () => ({ allowed: false });
  const built = await buildAuthorization({ mode: 'Delegated', hosting: { kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 2000 },
    allowCacheTTLMs: 10_000, denyCacheTTLMs: 10_000, alwaysAllowPaths: ['/healthz', '/livez', '/readyz', '/version'], policyPollIntervalMs: 1000 }, { logger: quiet });
  t.after(() => built.close());
  assert.equal((await built.authorizer.authorize({ ...getDemo, user: { username: 'agg', groups: ['system:masters'] } })).decision, 'allow');
  assert.equal((await built.authorizer.authorize({ user: alice, verb: 'get', resourceRequest: false, path: '/readyz' })).decision, 'allow');
  assert.equal(fake.sars().length, 0);
  assert.equal((await built.authorizer.authorize({ user: alice, verb: 'get', resourceRequest: false, path: '/metrics' })).decision, 'noopinion');
  assert.equal(fake.sars().length, 1);
});

function authnOpts(fake: FakeHostingCluster, over: Partial<AuthnOptions> = {}): AuthnOptions {
  return {
    requestHeader: { allowedNames: [], usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], extraHeadersPrefix: ['X-Remote-Extra-'], uidHeaders: [] },
    requestHeaderFromFlags: false, hosting: { kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 2000 },
    skipLookup: false, tolerateLookupFailure: false, tokenCacheTTLMs: 200, apiAudiences: [], ...over,
  };
}

const bearer = (token: string): AuthnRequest => ({ headers: { authorization: `Bearer ${token}` }, rawHeaders: ['Authorization', `Bearer ${token}`] });

test('TokenReview: exact request, cached answers, errors not cached', async (t) => {
  const fake = await fakeCluster(t);
  fake.setConfigMap({});
  fake.onTokenReview = (token) => (token === 'good' ? { username: 'bob', uid: 'u-bob', groups: ['devs'], extra: { 'configbutler.ai/claims/display-name': ['Bob B'] } } : false);
  const clock = new ManualClock();
  const built = await buildAuthentication(authnOpts(fake), { logger: quiet, now: clock.now });
  t.after(() => built.close());

  const r = await built.authenticator.authenticate(bearer('good'));
  assert.deepEqual(r, { kind: 'user', user: { username: 'bob', uid: 'u-bob', groups: ['devs', 'system:authenticated'], extra: { 'configbutler.ai/claims/display-name': ['Bob B'] } }, consumedHeaders: ['authorization'] });
  assert.equal(fake.tokenReviews()[0]!.raw, '{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"good"}}');
  await built.authenticator.authenticate(bearer('good'));
  assert.equal(fake.tokenReviews().length, 1);

  assert.equal((await built.authenticator.authenticate(bearer('bad'))).kind, 'error');
  assert.equal((await built.authenticator.authenticate(bearer('bad'))).kind, 'error');
  assert.equal(fake.tokenReviews().length, 2, 'a rejected token is cached too');
  clock.advance(199); // the TTL is 200 ms
  await built.authenticator.authenticate(bearer('good'));
  await built.authenticator.authenticate(bearer('bad'));
  assert.equal(fake.tokenReviews().length, 2, 'cached until the TTL has passed');
  clock.advance(1);
  await built.authenticator.authenticate(bearer('good'));
  assert.equal(fake.tokenReviews().length, 3, 're-asked after the TTL');

  fake.onTokenReview = () => ({ status: 500 });
  const e1 = await built.authenticator.authenticate(bearer('other'));
  assert.equal(e1.kind, 'error');
  await built.authenticator.authenticate(bearer('other'));
  assert.equal(fake.tokenReviews().length, 5, 'errors are not cached');
  fake.onTokenReview = () => ({ error: 'webhook down' });
  assert.equal((await built.authenticator.authenticate(bearer('x'))).kind, 'error');
  assert.deepEqual(await built.authenticator.authenticate({ headers: {}, rawHeaders: [] }), { kind: 'anonymous' });
});

test('extension-apiserver-authentication: CAs and header names come from the ConfigMap and rotate without restart', async (t) => {
  const fake = await fakeCluster(t);
  const rh1 = makeCA('front-proxy-ca-1');
  const rh2 = makeCA('front-proxy-ca-2');
  const clientCA = makeCA('cluster-ca');
  // As the TLS layer hands it over: the presented leaf completed up to its root, verified by
  // OpenSSL against the union of the bundles (which bundle anchors it is the authenticators' call).
  const fp1 = issueClientCert(rh1, 'front-proxy-client');
  const fp2 = issueClientCert(rh2, 'front-proxy-client');
  const issuers = new Map<string, string>([[fp1.certPem, rh1.certPem], [fp2.certPem, rh2.certPem]]);
  const chain = (pem: string) => [new X509Certificate(pem), new X509Certificate(issuers.get(pem)!)];
  const proxied = (certPem: string): AuthnRequest => ({ peerChain: chain(certPem), peerVerified: { authorized: true }, headers: {},
    rawHeaders: ['X-Proxy-User', 'alice', 'X-Proxy-Group', 'devs', 'X-Proxy-Group', 'ops', 'X-Proxy-Extra-Scopes%2Fa', 'x'] });
  const data = (rh: string) => ({
    'client-ca-file': clientCA.certPem,
    'requestheader-client-ca-file': rh,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-username-headers': '["X-Proxy-User"]',
    'requestheader-group-headers': '["X-Proxy-Group"]',
    'requestheader-extra-headers-prefix': '["X-Proxy-Extra-"]',
  });

  // Missing ConfigMap: startup fails unless tolerated.
  await assert.rejects(buildAuthentication(authnOpts(fake), { logger: quiet }), /cannot read kube-system\/extension-apiserver-authentication/);
  const tolerant = await buildAuthentication(authnOpts(fake, { tolerateLookupFailure: true }), { logger: quiet });
  tolerant.close();

  fake.setConfigMap(data(rh1.certPem));
  const errors: string[] = [];
  const built = await buildAuthentication(authnOpts(fake), { logger: { ...quiet, error: (m: string) => errors.push(m) }, configMapRetryMs: 50 });
  t.after(() => built.close());
  let changes = 0;
  built.onTLSCAsChange(() => changes++);
  assert.deepEqual(built.tlsCAs(), [clientCA.certPem, rh1.certPem]);
  const r = await built.authenticator.authenticate(proxied(fp1.certPem));
  assert.deepEqual(r, { kind: 'user', user: { username: 'alice', groups: ['devs', 'ops', 'system:authenticated'], extra: { 'scopes/a': ['x'] } },
    consumedHeaders: ['X-Proxy-User', 'X-Proxy-Group', 'X-Proxy-Extra-Scopes%2Fa'] });
  assert.equal((await built.authenticator.authenticate(proxied(fp2.certPem))).kind, 'error');
  const carol = issueClientCert(clientCA, 'carol', ['qa']);
  issuers.set(carol.certPem, clientCA.certPem);
  const c = await built.authenticator.authenticate({ peerChain: chain(carol.certPem), peerVerified: { authorized: true }, headers: {}, rawHeaders: ['X-Proxy-User', 'mallory'] });
  assert.equal(c.kind === 'user' && c.user.username, 'carol');

  // Rotation: the watch delivers the new CA; no restart.
  fake.setConfigMap(data(rh2.certPem));
  const deadline = Date.now() + 5000;
  while (!built.tlsCAs().includes(rh2.certPem) && Date.now() < deadline) await sleep(10);
  assert.deepEqual(built.tlsCAs(), [clientCA.certPem, rh2.certPem]);
  assert.ok(changes >= 1);
  const r2 = await built.authenticator.authenticate(proxied(fp2.certPem));
  assert.equal(r2.kind === 'user' && r2.user.username, 'alice');
  assert.equal((await built.authenticator.authenticate(proxied(fp1.certPem))).kind, 'error');

  // A broken update keeps the previous, working settings.
  fake.setConfigMap({ ...data(rh2.certPem), 'requestheader-client-ca-file': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' });
  // Awaited: the update was read and refused (where a 100 ms sleep hoped it had been read).
  const refusedBy = Date.now() + 5_000;
  while (!errors.some((m) => m.includes('keeping the previous settings')) && Date.now() < refusedBy) await sleep(10);
  assert.match(errors.join('\n'), /^authentication: kube-system\/extension-apiserver-authentication is unusable, keeping the previous settings: /m);
  const r3 = await built.authenticator.authenticate(proxied(fp2.certPem));
  assert.equal(r3.kind === 'user' && r3.user.username, 'alice');
});
