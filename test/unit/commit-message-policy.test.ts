// The person-trailer rule (src/registry/commit-message-policy.ts) with the real RBAC authorizer of
// the e2e policy (alice holds assert-author on "tenants", bob holds nothing), the message rules of
// api/commitrequest.ts, and the generated messages of mirrored commits (no trailers, ever).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RBACAuthorizer } from '../../src/auth/rbac.js';
import { parsePolicy } from '../../src/auth/rbac-file.js';
import type { Authorizer, UserInfo } from '../../src/auth/types.js';
import { DEFAULT_PERSON_TRAILERS, admitMessageTrailers, foreignPersonTrailers, parsePersonTrailers } from '../../src/registry/commit-message-policy.js';
import { commitRequestStrategy } from '../../src/registry/commitrequest-strategy.js';
import { normalizeCommitRequest, validateCommitRequest } from '../../src/api/commitrequest.js';
import { parseTrailers } from '../../src/api/commit-trailers.js';
import { generatedMessage } from '../../src/controllers/windows/message.js';
import type { Window } from '../../src/controllers/windows/record.js';
import { StatusError } from '../../src/api/status.js';
import { FlagError, parseServeFlags } from '../../src/cli/options.js';
import { DEFAULT_CLUSTER } from '../../src/storage/types.js';
import type { KubeObject } from '../../src/model/object.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '../../../test/auth/fixtures/rbac-policy.yaml');
const rbac = new RBACAuthorizer(parsePolicy(readFileSync(FIXTURE, 'utf8')));
const failing: Authorizer = { authorize: async () => { throw new Error('hosting cluster unreachable'); } };
const user = (username: string, extra?: Record<string, string[]>): UserInfo => ({ username, groups: ['system:authenticated'], ...(extra ? { extra } : {}) });
const [alice, bob] = [user('alice'), user('bob')];
const keys = DEFAULT_PERSON_TRAILERS;
const RULE = 'requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]';

async function statusOf(p: Promise<unknown>): Promise<StatusError['status'] | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    if (e instanceof StatusError) return e.status;
    throw e;
  }
}

test('every listed key, in any case, with continuation lines, is a person trailer; prose and other keys are not', () => {
  for (const key of keys) {
    for (const k of [key, key.toLowerCase(), key.toUpperCase()]) {
      assert.deepEqual(foreignPersonTrailers(`fix\n\n${k}: Alice <alice@example.com>`, bob, keys), [{ key: k, value: 'Alice <alice@example.com>' }], k);
    }
  }
  assert.deepEqual(foreignPersonTrailers('fix\n\nCo-authored-by:\n  Alice\n  <alice@example.com>\n', bob, keys), [{ key: 'Co-authored-by', value: 'Alice <alice@example.com>' }]);
  assert.deepEqual(foreignPersonTrailers('fix\n\nCo-authored-by : Alice <alice@example.com>', bob, keys).length, 1);
  // Not the last paragraph: git reads no trailer there, so nobody is named.
  assert.deepEqual(foreignPersonTrailers('fix\n\nCo-authored-by: Alice <alice@example.com>\n\nMore prose.', bob, keys), []);
  // A trailer below a "---" line: git log reads it (no divider), so it counts.
  assert.equal(foreignPersonTrailers('fix\n\nprose\n---\n\nCo-authored-by: Alice <alice@example.com>', bob, keys).length, 1);
  assert.deepEqual(foreignPersonTrailers('fix\n\nFixes: #12\nChange-Id: I0123', bob, keys), []);
  // Extra keys from --person-trailers.
  assert.deepEqual(foreignPersonTrailers('fix\n\nPaired-with: Alice', bob, keys), []);
  assert.equal(foreignPersonTrailers('fix\n\nPAIRED-WITH: Alice', bob, parsePersonTrailers('Paired-with, On-behalf-of')).length, 1);
});

test("the submitter's own identity, as authorship derives it, is not someone else", () => {
  const own = 'fix\n\nSigned-off-by: bob <bob@noreply.cluster.local>';
  assert.deepEqual(foreignPersonTrailers(own, bob, keys), []);
  assert.deepEqual(foreignPersonTrailers('fix\n\nSigned-off-by: bob <BOB@noreply.cluster.local>', bob, keys), []);
  assert.equal(foreignPersonTrailers('fix\n\nSigned-off-by: Bob <bob@noreply.cluster.local>', bob, keys).length, 1, 'the name must be the derived one');
  assert.equal(foreignPersonTrailers('fix\n\nSigned-off-by: bob', bob, keys).length, 1, 'a name alone identifies nobody');
  assert.equal(foreignPersonTrailers(own, alice, keys).length, 1);
  // With the identity's claims, the derived author is the display name and email they carry.
  const claimed = user('bob', { 'configbutler.ai/claims/display-name': ['Bob Builder'], 'configbutler.ai/claims/email': ['bob@corp.example'] });
  assert.deepEqual(foreignPersonTrailers('fix\n\nSigned-off-by: Bob Builder <bob@corp.example>', claimed, keys), []);
  assert.equal(foreignPersonTrailers(own, claimed, keys).length, 1);
});

test('admission: 403 naming the trailer and the rule unless assert-author; an authorizer error denies', async () => {
  const msg = 'fix\n\nCo-authored-by: Alice <alice@example.com>\nReviewed-by: Carol <carol@example.com>';
  const denied = await statusOf(admitMessageTrailers(rbac, bob, 'team-a', 'tenants', undefined, msg, keys));
  assert.deepEqual(denied, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
    details: { name: 'tenants', group: 'configbutler.ai', kind: 'gittargets' },
    message: 'gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
      + `the trailer "Co-authored-by: Alice <alice@example.com>" (and 1 more) in spec.message names someone other than the submitter; a person-naming trailer in a CommitRequest for GitTarget "tenants" ${RULE}`,
  });
  assert.equal(await statusOf(admitMessageTrailers(rbac, alice, 'team-a', 'tenants', undefined, msg, keys)), undefined);
  const otherTarget = await statusOf(admitMessageTrailers(rbac, alice, 'team-a', 'other', undefined, msg, keys));
  assert.match(otherTarget!.message!, /resourceNames: \["other"\]/);
  const unreachable = await statusOf(admitMessageTrailers(failing, alice, 'team-a', 'tenants', undefined, msg, keys));
  assert.equal(unreachable!.code, 403);
  assert.match(unreachable!.message!, /User "alice" cannot assert-author .*: the authorization check could not be made: hosting cluster unreachable$/);
  // Nothing to authorize: the failing authorizer is never asked.
  assert.equal(await statusOf(admitMessageTrailers(failing, bob, 'team-a', 'tenants', undefined, 'fix\n\nSigned-off-by: bob <bob@noreply.cluster.local>', keys)), undefined);
  assert.equal(await statusOf(admitMessageTrailers(failing, bob, 'team-a', 'tenants', undefined, 'fix\n\nCo-authored-by: A <a@x>\n\nprose', keys)), undefined);
});

test('the strategy checks a rewritten message on update too, and leaves an unchanged one alone', async () => {
  const s = commitRequestStrategy(rbac);
  const obj = (message: string): KubeObject => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name: 'x', namespace: 'team-a' }, spec: { targetRef: { name: 'tenants' }, message } });
  const forged = obj('fix\n\nCo-authored-by: Alice <alice@example.com>');
  const ctx = { cluster: DEFAULT_CLUSTER, user: bob };
  assert.equal((await statusOf(s.admitUpdate!(ctx, forged, obj('fix'), '')))!.code, 403);
  assert.equal(await statusOf(s.admitUpdate!(ctx, forged, forged, '')), undefined, 'a label change by bob on alice\'s request');
  assert.equal(await statusOf(s.admitUpdate!(ctx, forged, obj('fix'), 'status')), undefined, 'status writes carry no message');
  assert.equal(await statusOf(s.admitUpdate!({ ...ctx, user: alice }, forged, obj('fix'), '')), undefined);
});

test('--person-trailers: keys git can read, else an error naming the key', () => {
  assert.deepEqual(parsePersonTrailers(undefined), [...DEFAULT_PERSON_TRAILERS]);
  assert.deepEqual(parsePersonTrailers(' Paired-with ,,On-behalf-of'), [...DEFAULT_PERSON_TRAILERS, 'Paired-with', 'On-behalf-of']);
  assert.throws(() => parsePersonTrailers('Paired with'), /^Error: "Paired with" is not a trailer key git reads \(letters, digits and "-" only\)$/);
  // Through the serve command's flag parsing.
  const hosting = ['--kubeconfig', '/nonexistent/kubeconfig'];
  assert.deepEqual(parseServeFlags([...hosting, '--person-trailers=Paired-with']).personTrailers, [...DEFAULT_PERSON_TRAILERS, 'Paired-with']);
  assert.deepEqual(parseServeFlags(hosting).personTrailers, [...DEFAULT_PERSON_TRAILERS]);
  assert.throws(() => parseServeFlags([...hosting, '--person-trailers=Co-authored-by:']), (e: Error) =>
    e instanceof FlagError && e.message === '--person-trailers: "Co-authored-by:" is not a trailer key git reads (letters, digits and "-" only)');
});

test('messages are plain text: ESC, NUL, C1 and a lone CR are refused; CRLF becomes LF; tab is fine', () => {
  const errs = (message: string) => validateCommitRequest({ spec: { targetRef: { name: 't' }, message } }).map((e) => `${e.field}: ${e.detail}`);
  assert.deepEqual(errs('red \u001b[31mtext'), ['spec.message: must be plain text: no control characters other than newline and tab (found \\x1b at offset 4)']);
  assert.deepEqual(errs('a\u0000b'), ['spec.message: must be plain text: no control characters other than newline and tab (found \\x00 at offset 1)']);
  assert.deepEqual(errs('a\u009bb'), ['spec.message: must be plain text: no control characters other than newline and tab (found \\x9b at offset 1)']);
  assert.deepEqual(errs('fix\rCo-authored-by: A'), ['spec.message: must be plain text: no control characters other than newline and tab (found a carriage return not followed by a newline at offset 3)']);
  assert.deepEqual(errs('fix\n\n\tindented\tbody'), []);
  const o = { spec: { targetRef: { name: 't' }, message: 'fix\r\n\r\nbody\r\n' } };
  normalizeCommitRequest(o);
  assert.equal(o.spec.message, 'fix\n\nbody\n');
  assert.deepEqual(validateCommitRequest(o), []);
});

test('generated messages of mirrored commits never carry a trailer, whatever the objects are named', () => {
  const hostile = 'x\n\nCo-authored-by: The CEO <ceo@corp.example>\u001b[2J';
  const change = (name: string) => ({ key: name, change: { op: 'write', object: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name } }, resource: 'clusterroles' } });
  const window = (changes: unknown[]): Window => ({ seq: 1, kind: 'changes', authorKey: '', openedAt: 0, lastChangeAt: 0, changes } as unknown as Window);
  const one = generatedMessage(window([change(hostile)]), 'team-a/tenants');
  assert.equal(one, 'Update clusterroles x\\u000a\\u000aCo-authored-by: The CEO <ceo@corp.example>\\u001b[2J');
  const two = generatedMessage(window([change(hostile), change('Signed-off-by: Mallory <m@x>')]), 'team-a/tenants');
  assert.equal(two, 'Update 2 objects in team-a/tenants\n\n- update clusterroles x\\u000a\\u000aCo-authored-by: The CEO <ceo@corp.example>\\u001b[2J\n- update clusterroles Signed-off-by: Mallory <m@x>');
  for (const m of [one, two]) {
    assert.deepEqual([...parseTrailers(m), ...parseTrailers(m, { divider: false })], []);
  }
});
