// The re-verification of GitTargets' recorded authority (src/controllers/authority/verifier.ts),
// over a real embedded store, a real informer and the real RBAC policy-file authorizer: one pass
// over 2,000 GitTargets asks each distinct question once; an authorizer that cannot answer leaves a
// grant standing for at most two intervals, then the mirror's verdict is AuthorityUnverified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore, type Store } from '../../src/storage/index.js';
import { Informer } from '../../src/controllers/runtime/index.js';
import { AuthorityVerifier } from '../../src/controllers/authority/verifier.js';
import { RBACFileAuthorizer } from '../../src/auth/rbac-file.js';
import type { Attributes, Authorizer } from '../../src/auth/types.js';
import { createLogger } from '../../src/metrics/logger.js';
import { ManualClock } from '../support/clock.js';
import { until } from '../support/deadline.js';

const GT = { group: 'configbutler.ai', resource: 'gittargets' };
const POLICY = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read, namespace: team-a}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-read, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
`;

function gitTarget(name: string, user: string, namespaces: string[], verifiedAt: string) {
  return {
    apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1 },
    spec: { repository: { url: 'https://git.example.com/x.git' }, branch: 'main', path: name, resources: [{ group: '', resource: 'configmaps', namespaces }] },
    status: { authority: { username: user, groups: ['system:authenticated'], verifiedAt } },
  };
}

async function seeded(t: { after(fn: () => unknown): void }, objs: ReturnType<typeof gitTarget>[]): Promise<{ store: Store; informer: Informer }> {
  const store = await createStore({ storage: 'embedded' });
  t.after(() => store.close());
  for (const o of objs) await store.create(GT, { cluster: '_', namespace: 'team-a', name: o.metadata.name }, o);
  const informer = new Informer(store, GT, { log: createLogger('error') });
  await informer.start();
  t.after(() => informer.stop());
  await until(() => informer.list().length === objs.length, 'the informer to list every GitTarget', 30_000);
  return { store, informer };
}

test('one pass over 2,000 GitTargets of two tenants asks each distinct question once; bob keeps his grant, alice is revoked', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'authority-verifier-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  const rbac = await RBACFileAuthorizer.start(join(dir, 'policy.yaml'), 60_000, { info() {}, warn() {}, error() {} });
  t.after(() => rbac.close());
  const asked: string[] = [];
  const counting: Authorizer = { authorize: (a: Attributes) => (asked.push(`${a.user.username} ${a.verb} ${a.resource} ${a.namespace}`), rbac.authorize(a)) };
  const now = new Date().toISOString();
  const objs = Array.from({ length: 2_000 }, (_, i) => (i % 2 ? gitTarget(`bob-${i}`, 'bob', ['team-a'], now) : gitTarget(`alice-${i}`, 'alice', ['finance'], now)));
  const { informer } = await seeded(t, objs);
  const v = new AuthorityVerifier({ authorizer: counting, gitTargets: informer, intervalMs: 300_000, log: createLogger('error') });
  const woken: string[] = [];
  v.onChange((k) => woken.push(k));
  // The mirror has looked at two of them (it is told when their verdict changes).
  assert.deepEqual(v.verdict('_/team-a/bob-1', informer.get('_/team-a/bob-1')!), { ok: true });
  assert.deepEqual(v.verdict('_/team-a/alice-0', informer.get('_/team-a/alice-0')!), { ok: true });
  const t0 = performance.now();
  await v.pass();
  const ms = performance.now() - t0;
  console.log(`# one pass over 2000 GitTargets: ${asked.length} questions, ${ms.toFixed(0)} ms`);
  assert.deepEqual(asked.sort(), ['alice list configmaps finance', 'bob list configmaps team-a', 'bob watch configmaps team-a']);
  assert.deepEqual(v.verdict('_/team-a/bob-1999', informer.get('_/team-a/bob-1999')!), { ok: true });
  assert.deepEqual(v.verdict('_/team-a/alice-1998', informer.get('_/team-a/alice-1998')!), {
    ok: false,
    reason: 'AuthorityRevoked',
    message: 'the authority of User "alice" is revoked: User "alice" cannot list resource "configmaps" in API group "" in the namespace "finance"; nothing is mirrored until the grant returns or a user who holds it updates the spec',
  });
  assert.deepEqual(woken, ['_/team-a/alice-0'], 'only the key whose verdict changed is woken');
});

test('an authorizer that cannot answer: the grant stands for two intervals, then AuthorityUnverified; it resumes when a pass confirms it', { timeout: 60_000 }, async (t) => {
  const clock = new ManualClock();
  const INTERVAL = 5_000;
  let failing = true;
  const authorizer: Authorizer = {
    authorize: async () => {
      if (failing) throw new Error('SubjectAccessReview: connect ECONNREFUSED 127.0.0.1:6443');
      return { decision: 'allow' };
    },
  };
  const { informer } = await seeded(t, [gitTarget('x', 'bob', ['team-a'], new Date(clock.now()).toISOString())]);
  const v = new AuthorityVerifier({ authorizer, gitTargets: informer, intervalMs: INTERVAL, log: createLogger('error'), now: clock.now });
  const verdict = () => v.verdict('_/team-a/x', informer.get('_/team-a/x')!);
  // Before any pass, an old admission is not decided on (the mirror waits for the first pass).
  clock.advance(2 * INTERVAL + 1);
  assert.deepEqual(verdict(), { ok: false, pending: true, reason: 'AuthorityUnverified', message: 'no re-verification completed' });
  await v.pass();
  const admitted = new Date(clock.now() - 2 * INTERVAL - 1).toISOString().replace(/\.\d{3}Z$/, 'Z');
  assert.deepEqual(verdict(), {
    ok: false,
    reason: 'AuthorityUnverified',
    message: `the authority of User "bob" was last verified at ${admitted} and could not be re-verified since (User "bob" cannot list resource "configmaps" in API group "" in the namespace "team-a": the authorization check could not be made: SubjectAccessReview: connect ECONNREFUSED 127.0.0.1:6443); nothing is mirrored on an unconfirmed grant`,
  });
  failing = false;
  await v.pass();
  assert.deepEqual(verdict(), { ok: true });
  // Confirmed at that pass: one failed pass later the grant still stands, two intervals later it does not.
  failing = true;
  clock.advance(INTERVAL);
  await v.pass();
  assert.deepEqual(verdict(), { ok: true });
  clock.advance(INTERVAL + 1);
  await v.pass();
  assert.equal((verdict() as { reason: string }).reason, 'AuthorityUnverified');
});
