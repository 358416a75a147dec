// A CommitRequest message cannot name a person the server did not verify (docs/security.md#trailers-name-people).
// The real server under --authorization-mode=RBAC with a policy file (bob may write CommitRequests,
// alice may too and holds assert-author on GitTarget "tenants"), Redis storage, the controllers,
// and a real `git http-backend` remote read back with the git CLI:
// - bob's `Co-authored-by: Alice <alice@example.com>` is 403 with the exact Status, for every
//   listed key in any case, folded over continuation lines, on create, dryRun and server-side apply;
//   nothing is stored and nothing is committed;
// - a trailer-looking line in a non-final paragraph (git reads no trailer there) and bob's own
//   identity as Signed-off-by are allowed, and bob's own trailer reaches git exactly;
// - alice, granted assert-author, gets exactly her trailer in `git log -1 --format=%B`;
// - update, merge patch and apply of a pending request's message are 422 (immutable), unchanged;
// - ANSI ESC and NUL are 422 Invalid on spec.message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PERSON_TRAILERS } from '../../src/registry/commit-message-policy.js';
import { issueClientCert } from '../support/pki.js';
import { until } from '../support/deadline.js';
import { GROUP_PATH, request, type HttpResult } from '../auth-e2e/harness.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { configMap } from '../controllers/harness.js';
import { startRbacMirror } from '../controllers/rbac-mirror.js';

const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: commitrequest-writer, namespace: team-a}
rules:
- {apiGroups: ["configbutler.ai"], resources: ["commitrequests"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]}
- {apiGroups: ["configbutler.ai"], resources: ["gittargets"], verbs: ["get", "list", "watch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: commitrequest-writers, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: commitrequest-writer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenants-author, namespace: team-a}
rules:
- {apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-tenants-author, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenants-author}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
`;

const CREQS = `${GROUP_PATH}/namespaces/team-a/commitrequests`;
const BOT = 'Reverser Bot <bot@reverser.example>';
const FORBIDDEN_PREFIX = 'gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": ';
const RULE = 'requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]';
const refusal = (trailer: string) => ({
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
  details: { name: 'tenants', group: 'configbutler.ai', kind: 'gittargets' },
  message: `${FORBIDDEN_PREFIX}the trailer ${JSON.stringify(trailer)} in spec.message names someone other than the submitter; a person-naming trailer in a CommitRequest for GitTarget "tenants" ${RULE}`,
});

const creq = (name: string, message: string) => ({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'team-a' }, spec: { targetRef: { name: 'tenants' }, message },
});

test('person-naming trailers need assert-author on every write path; messages are plain text', { timeout: 180_000 }, async (t) => {
  const { srv, clientCA, remote, key, sink } = await startRbacMirror(t, 'trailers', POLICY, ['--person-trailers=Paired-with']);
  const certs = { alice: issueClientCert(clientCA, 'alice'), bob: issueClientCert(clientCA, 'bob') };
  const as = (who: keyof typeof certs) => (method: string, path: string, body?: unknown, contentType?: string): Promise<HttpResult> =>
    request(srv.url, srv.caPem, path, { method, cert: certs[who], body, contentType });
  const [alice, bob] = [as('alice'), as('bob')];
  const stored = async (name: string) => (await bob('GET', `${CREQS}/${name}`)).status;
  const waitCommitted = (name: string) =>
    until(async () => {
      const r = (await alice('GET', `${CREQS}/${name}`)).json();
      return r.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') ?? false;
    }, `CommitRequest ${name} Ready`, 60_000, 100);

  // bob names alice: 403 with the exact Status, for each key in three cases; nothing is stored.
  const keys = [...DEFAULT_PERSON_TRAILERS, 'Paired-with'];
  let n = 0;
  for (const k of keys) {
    for (const written of [k, k.toLowerCase(), k.toUpperCase()]) {
      const r = await bob('POST', CREQS, creq(`bob-${n++}`, `Fix replicas\n\n${written}: Alice <alice@example.com>\n`));
      assert.deepEqual([r.status, r.json()], [403, refusal(`${written}: Alice <alice@example.com>`)], written);
    }
  }
  const folded = await bob('POST', CREQS, creq('bob-folded', 'Fix\n\nReviewed-by: Nobody\nCo-authored-by:\n  Alice\n  <alice@example.com>'));
  assert.deepEqual([folded.status, folded.json().message], [403, refusal('Reviewed-by: Nobody').message.replace('"Reviewed-by: Nobody"', '"Reviewed-by: Nobody" (and 1 more)')]);
  const dry = await bob('POST', `${CREQS}?dryRun=All`, creq('bob-dry', 'Fix\n\nCo-authored-by: Alice <alice@example.com>'));
  assert.deepEqual([dry.status, dry.json()], [403, refusal('Co-authored-by: Alice <alice@example.com>')]);
  const applied = await bob('PATCH', `${CREQS}/bob-apply?fieldManager=kubectl`, JSON.stringify(creq('bob-apply', 'Fix\n\nCo-authored-by: Alice <alice@example.com>')), 'application/apply-patch+yaml');
  assert.deepEqual([applied.status, applied.json()], [403, refusal('Co-authored-by: Alice <alice@example.com>')]);
  for (const name of ['bob-0', 'bob-folded', 'bob-dry', 'bob-apply']) assert.equal(await stored(name), 404, name);
  assert.equal((await bob('GET', CREQS)).json().items.length, 0);

  // What git would not read as trailers, and bob's own identity, are bob's to write.
  const prose = await bob('POST', `${CREQS}?dryRun=All`, creq('bob-prose', 'Fix\n\nCo-authored-by: Alice <alice@example.com>\n\nThat line above is prose.'));
  assert.equal(prose.status, 201, prose.text);
  assert.equal(await stored('bob-prose'), 404, 'dryRun stores nothing');

  await sink.add(key, [configMap('one', { v: '1' })]);
  const bobMessage = 'Bob raises replicas\n\nSigned-off-by: bob <bob@noreply.cluster.local>';
  const own = await bob('POST', CREQS, creq('bob-own', bobMessage));
  assert.equal(own.status, 201, own.text);
  await waitCommitted('bob-own');

  // alice holds assert-author: her trailer naming someone else is accepted (dryRun too) and committed as written.
  const aliceMessage = 'Raise the replica count\n\nCo-authored-by: Alice <alice@example.com>';
  const aliceDry = await alice('POST', `${CREQS}?dryRun=All`, creq('alice-save', aliceMessage));
  assert.equal(aliceDry.status, 201, aliceDry.text);
  assert.equal(await stored('alice-save'), 404);
  await sink.add(key, [configMap('two', { v: '2' })]);
  assert.equal((await alice('POST', CREQS, creq('alice-save', aliceMessage))).status, 201);
  await waitCommitted('alice-save');

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`alice <alice@noreply.cluster.local>|${BOT}|Raise the replica count`, `bob <bob@noreply.cluster.local>|${BOT}|Bob raises replicas`]);
  assert.equal(await git(c.dir, 'log', '-1', '--format=%B'), `${aliceMessage}\n\n`);
  assert.equal(await git(c.dir, 'log', '-1', '--format=%(trailers)'), 'Co-authored-by: Alice <alice@example.com>\n\n');
  assert.equal(await git(c.dir, 'log', '-1', '--format=%B', 'HEAD~1'), `${bobMessage}\n\n`);

  // A pending request's message cannot be rewritten by any path: 422 immutable, the object unchanged.
  assert.equal((await alice('POST', CREQS, creq('alice-pending', 'Pending save'))).status, 201);
  // Once the controller has answered it (nothing pending: NothingToCommit), no status write races the writes below.
  let pending: any;
  await until(async () => {
    pending = (await alice('GET', `${CREQS}/alice-pending`)).json();
    return pending.status?.conditions?.some((c: { type: string; reason: string }) => c.type === 'Ready' && c.reason !== 'Pending') ?? false;
  }, 'CommitRequest alice-pending answered', 60_000, 100);
  const rewritten = 'Pending save\n\nCo-authored-by: Alice <alice@example.com>';
  const immutable = (r: HttpResult) => [r.status, r.json().reason, r.json().details?.causes?.[0]?.field];
  const put = await bob('PUT', `${CREQS}/alice-pending`, { ...pending, spec: { ...pending.spec, message: rewritten } });
  assert.deepEqual(immutable(put), [422, 'Invalid', 'spec']);
  const merge = await bob('PATCH', `${CREQS}/alice-pending`, { spec: { message: rewritten } }, 'application/merge-patch+json');
  assert.deepEqual(immutable(merge), [422, 'Invalid', 'spec']);
  const reapply = await bob('PATCH', `${CREQS}/alice-pending?fieldManager=kubectl&force=true`, JSON.stringify(creq('alice-pending', rewritten)), 'application/apply-patch+yaml');
  assert.deepEqual(immutable(reapply), [422, 'Invalid', 'spec']);
  const after = (await alice('GET', `${CREQS}/alice-pending`)).json();
  assert.deepEqual([after.spec.message, after.metadata.generation, after.metadata.resourceVersion], ['Pending save', 1, pending.metadata.resourceVersion]);

  // Plain text: ANSI ESC and NUL are 422 Invalid on spec.message; nothing is stored.
  for (const [name, message, found] of [['esc', 'Fix \u001b[2J\u001b[31mred', '\\x1b at offset 4'], ['nul', 'Fix\u0000hidden', '\\x00 at offset 3']] as const) {
    const r = await bob('POST', CREQS, creq(name, message));
    assert.deepEqual([r.status, r.json()], [422, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Invalid', code: 422,
      message: `CommitRequest.configbutler.ai "${name}" is invalid: spec.message: Invalid value: ${JSON.stringify(message)}: must be plain text: no control characters other than newline and tab (found ${found})`,
      details: { name, group: 'configbutler.ai', kind: 'CommitRequest', causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(message)}: must be plain text: no control characters other than newline and tab (found ${found})`, field: 'spec.message' }] },
    }], name);
    assert.equal(await stored(name), 404);
  }
});
