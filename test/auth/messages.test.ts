// 403 texts, the assert-author check (allow, deny, fail closed), submitter, flag parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forbiddenDetails, forbiddenMessage } from '../../src/auth/messages.js';
import { checkAssertAuthor } from '../../src/auth/assert-author.js';
import { preserveSubmitter, stampSubmitter, submitterFromUser } from '../../src/auth/submitter.js';
import { parseAuthFlags, parseDuration, AUTH_FLAGS } from '../../src/auth/options.js';
import { buildAuthorization, PrivilegedUnionAuthorizer } from '../../src/auth/authorization.js';
import type { Attributes, Authorizer, UserInfo } from '../../src/auth/types.js';

const alice: UserInfo = { username: 'alice', groups: ['system:authenticated'] };
const base: Attributes = { user: alice, verb: 'get', resourceRequest: true, apiGroup: 'configbutler.ai', apiVersion: 'v1alpha1', resource: 'gittargets', namespace: 'team-a', name: 'demo' };

test('forbiddenMessage matches Kubernetes byte for byte', () => {
  assert.equal(forbiddenMessage(base),
    'gittargets.configbutler.ai "demo" is forbidden: User "alice" cannot get resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"');
  assert.equal(forbiddenMessage({ ...base, verb: 'list', name: undefined }),
    'gittargets.configbutler.ai is forbidden: User "alice" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"');
  assert.equal(forbiddenMessage({ ...base, verb: 'list', name: undefined, namespace: undefined }),
    'gittargets.configbutler.ai is forbidden: User "alice" cannot list resource "gittargets" in API group "configbutler.ai" at the cluster scope');
  assert.equal(forbiddenMessage({ ...base, verb: 'patch', subresource: 'status' }),
    'gittargets.configbutler.ai "demo" is forbidden: User "alice" cannot patch resource "gittargets/status" in API group "configbutler.ai" in the namespace "team-a"');
  assert.equal(forbiddenMessage({ user: { username: 'system:anonymous', groups: [] }, verb: 'get', resourceRequest: false, path: '/apis' }),
    'forbidden: User "system:anonymous" cannot get path "/apis"');
  assert.equal(forbiddenMessage(base, 'no RBAC policy matched'),
    'gittargets.configbutler.ai "demo" is forbidden: User "alice" cannot get resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": no RBAC policy matched');
  assert.equal(forbiddenMessage({ ...base, apiGroup: '', resource: 'configmaps', name: 'x' }),
    'configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team-a"');
  assert.deepEqual(forbiddenDetails({ ...base, subresource: 'status' }), { name: 'demo', group: 'configbutler.ai', kind: 'gittargets' });
});

const fixed = (r: Awaited<ReturnType<Authorizer['authorize']>> | Error): Authorizer & { seen: Attributes[] } => {
  const seen: Attributes[] = [];
  return { seen, async authorize(a) { seen.push(a); if (r instanceof Error) throw r; return r; } };
};

test('checkAssertAuthor asks for assert-author on the GitTarget and names the rule on denial', async () => {
  const allow = fixed({ decision: 'allow' });
  assert.deepEqual(await checkAssertAuthor(allow, alice, 'team-a', 'tenants'), { allowed: true });
  assert.deepEqual(allow.seen[0], { user: alice, verb: 'assert-author', resourceRequest: true, namespace: 'team-a', apiGroup: 'configbutler.ai', apiVersion: 'v1alpha1', resource: 'gittargets', name: 'tenants' });

  const bob: UserInfo = { username: 'bob', groups: ['system:authenticated'] };
  const r = await checkAssertAuthor(fixed({ decision: 'noopinion' }), bob, 'team-a', 'tenants');
  assert.equal(r.allowed, false);
  if (r.allowed) return;
  assert.equal(r.message,
    'gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + 'setting spec.author on a CommitRequest for GitTarget "tenants" requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]');
  assert.deepEqual(r.details, { name: 'tenants', group: 'configbutler.ai', kind: 'gittargets' });

  const denied = await checkAssertAuthor(fixed({ decision: 'deny', reason: 'explicitly denied' }), bob, 'team-a', 'tenants');
  assert.ok(!denied.allowed && denied.message.includes(': explicitly denied; setting spec.author'));
});

test('checkAssertAuthor fails closed on any authorizer error', async () => {
  const r = await checkAssertAuthor(fixed(new Error('SubjectAccessReview failed: HTTP 500')), alice, 'team-a', 'tenants');
  assert.ok(!r.allowed);
  assert.match(r.message, /cannot assert-author resource "gittargets".*: the authorization check could not be made: SubjectAccessReview failed: HTTP 500$/);
  const thrower: Authorizer = { authorize() { throw new TypeError('boom'); } };
  const r2 = await checkAssertAuthor(thrower, alice, 'team-a', 'tenants');
  assert.ok(!r2.allowed && r2.message.endsWith('the authorization check could not be made: boom'));
  const r3 = await checkAssertAuthor(fixed({ decision: 'allow' }), alice, 'team-a', '');
  assert.ok(!r3.allowed && r3.message.includes('could not be made'));
});

test('system:masters and always-allowed paths bypass the inner authorizer; /metrics does not', async () => {
  const inner = fixed({ decision: 'noopinion' });
  const a = new PrivilegedUnionAuthorizer(['/healthz', '/livez', '/readyz', '/version', '/debug/*'], inner);
  assert.equal((await a.authorize({ ...base, user: { username: 'x', groups: ['system:masters'] } })).decision, 'allow');
  const path = (p: string) => ({ user: alice, verb: 'get', resourceRequest: false, path: p });
  assert.equal((await a.authorize(path('/healthz'))).decision, 'allow');
  assert.equal((await a.authorize(path('/debug/pprof'))).decision, 'allow');
  assert.equal((await a.authorize(path('/healthz/etcd'))).decision, 'noopinion');
  assert.equal((await a.authorize(path('/metrics'))).decision, 'noopinion');
  assert.equal(inner.seen.length, 2);
  const built = await buildAuthorization({ mode: 'AlwaysAllow', allowCacheTTLMs: 1, denyCacheTTLMs: 1, alwaysAllowPaths: ['/healthz'], policyPollIntervalMs: 1000 },
    { logger: { info() {}, warn() {}, error() {} } });
  assert.equal((await built.authorizer.authorize(base)).decision, 'allow');
  built.close();
});

test('submitter keeps identity and only the two claims; clients cannot set or change it', () => {
  const user: UserInfo = { username: 'alice', uid: 'u-1', groups: ['devs', 'system:authenticated'],
    extra: { 'configbutler.ai/claims/email': ['alice@example.com'], 'configbutler.ai/claims/display-name': ['Alice Doe'], 'authentication.kubernetes.io/credential-id': ['X'] } };
  assert.deepEqual(submitterFromUser(user), { username: 'alice', uid: 'u-1', groups: ['devs', 'system:authenticated'],
    extra: { 'configbutler.ai/claims/display-name': ['Alice Doe'], 'configbutler.ai/claims/email': ['alice@example.com'] } });
  assert.deepEqual(submitterFromUser({ username: 'bob', groups: [] }), { username: 'bob', groups: [] });
  const created = stampSubmitter({ status: { submitter: { username: 'mallory' } } }, { username: 'bob', groups: ['g'] });
  assert.deepEqual(created.status.submitter, { username: 'bob', groups: ['g'] });
  const updated = preserveSubmitter({ status: { submitter: { username: 'mallory' }, sha: 'x' } }, created);
  assert.deepEqual(updated.status, { submitter: { username: 'bob', groups: ['g'] }, sha: 'x' });
});

test('parseAuthFlags: defaults, validation errors name the flag', () => {
  const { authn, authz } = parseAuthFlags({ 'authorization-mode': 'AlwaysAllow' });
  assert.deepEqual(authn.requestHeader, { clientCAFile: undefined, allowedNames: [], usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], extraHeadersPrefix: ['X-Remote-Extra-'], uidHeaders: [] });
  assert.equal(authn.requestHeaderFromFlags, false);
  assert.equal(authn.tokenCacheTTLMs, 10_000);
  assert.deepEqual(authz.alwaysAllowPaths, ['/healthz', '/livez', '/readyz', '/version']);
  assert.equal(authz.allowCacheTTLMs, 10_000);
  assert.equal(authz.denyCacheTTLMs, 10_000);
  assert.throws(() => parseAuthFlags({ 'authorization-mode': 'Webhook' }), /--authorization-mode: unknown mode "Webhook"/);
  assert.throws(() => parseAuthFlags({ 'authorization-mode': 'RBAC' }), /--authorization-policy-file: required/);
  assert.throws(() => parseAuthFlags({ 'authorization-mode': 'AlwaysAllow', 'authorization-webhook-cache-authorized-ttl': '10 seconds' }), /--authorization-webhook-cache-authorized-ttl: invalid duration/);
  assert.throws(() => parseAuthFlags({ 'authorization-mode': 'AlwaysAllow', 'requestheader-group-headers': 'X Bad' }), /--requestheader-group-headers/);
  assert.throws(() => parseAuthFlags({ 'authorization-mode': 'AlwaysAllow', 'authorization-always-allow-paths': 'healthz' }), /--authorization-always-allow-paths/);
  const saved = process.env.KUBERNETES_SERVICE_HOST;
  delete process.env.KUBERNETES_SERVICE_HOST;
  assert.throws(() => parseAuthFlags({}), /--authorization-mode: Delegated needs a hosting cluster/);
  if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
  const d = parseAuthFlags({ kubeconfig: '/k', 'authorization-webhook-cache-unauthorized-ttl': '1m30s', 'requestheader-allowed-names': 'front-proxy-client, kcp' });
  assert.equal(d.authz.hosting?.kubeconfig, '/k');
  assert.equal(d.authz.denyCacheTTLMs, 90_000);
  assert.deepEqual(d.authn.requestHeader.allowedNames, ['front-proxy-client', 'kcp']);
  assert.equal(d.authn.requestHeaderFromFlags, true);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1h'), 3_600_000);
  assert.equal(parseDuration('x'), undefined);
  assert.ok(AUTH_FLAGS.every((f) => f.type === 'string' && f.name && f.description));
});
