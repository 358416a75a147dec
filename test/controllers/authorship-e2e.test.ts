// Authorship end to end with kubectl under RBAC (client certificates, Redis storage, controllers
// on): alice's request is authored by alice (derived identity); alice, granted assert-author on the
// GitTarget, asserts "Alice Doe <alice@example.com>"; bob is refused at create and nothing is
// committed for him; `kubectl --as bob` by an allowed impersonator behaves as bob. Committer:
// the server identity, always. Checked with git log on a fresh clone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { issueClientCert } from '../support/pki.js';
import { REPO_ROOT, kubectlFor } from '../auth-e2e/harness.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { configMap } from './harness.js';
import { startRbacMirror } from './rbac-mirror.js';

const POLICY = join(REPO_ROOT, 'test/auth/fixtures/rbac-policy.yaml');
const BOT = 'Reverser Bot <bot@reverser.example>';

test('kubectl under RBAC: submitter, asserted author, refused assertion, impersonation', { timeout: 120_000 }, async (t) => {
  const { srv, clientCA, dir, remote, key, sink } = await startRbacMirror(t, 'authorship', readFileSync(POLICY, 'utf8'));
  const alice = kubectlFor(dir, 'alice', srv.url, srv.caPem, issueClientCert(clientCA, 'alice'));
  const bob = kubectlFor(dir, 'bob', srv.url, srv.caPem, issueClientCert(clientCA, 'bob'));
  const admin = kubectlFor(dir, 'admin', srv.url, srv.caPem, issueClientCert(clientCA, 'e2e-admin'));
  const creq = (name: string, message: string, author?: { name: string; email: string }) =>
    JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'team-a' }, spec: { targetRef: { name: 'tenants' }, message, ...(author ? { author } : {}) } });
  const waitReady = async (k: typeof alice, name: string) => {
    const r = await k(['wait', '--for=condition=Ready', '-n', 'team-a', `creq/${name}`, '--timeout=30s']);
    assert.equal(r.stdout, `commitrequest.configbutler.ai/${name} condition met\n`, r.stderr);
  };

  await sink.add(key, [configMap('one', { v: '1' }), configMap('two', { v: '2' })]);
  assert.equal((await alice(['create', '-f', '-'], creq('alice-save', 'Alice edits two maps'))).code, 0);
  await waitReady(alice, 'alice-save');

  await sink.add(key, [configMap('one', { v: '3' })]);
  assert.equal((await alice(['create', '-f', '-'], creq('alice-asserted', 'Asserted by Alice', { name: 'Alice Doe', email: 'alice@example.com' }))).code, 0);
  await waitReady(alice, 'alice-asserted');

  await sink.add(key, [configMap('two', { v: '4' })]);
  const refused = await bob(['create', '-f', '-'], creq('bob-asserted', 'Bob pretends', { name: 'Alice Doe', email: 'alice@example.com' }));
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /User "bob" cannot assert-author resource "gittargets" in API group "configbutler\.ai" in the namespace "team-a"/);
  const asBobRefused = await admin(['--as', 'bob', 'create', '-f', '-'], creq('bob-asserted-2', 'Bob pretends again', { name: 'Alice Doe', email: 'alice@example.com' }));
  assert.match(asBobRefused.stderr, /User "bob" cannot assert-author/);
  assert.equal((await admin(['--as', 'bob', 'create', '-f', '-'], creq('bob-save', 'Bob saves'))).code, 0);
  await waitReady(admin, 'bob-save');

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [
    `bob <bob@noreply.cluster.local>|${BOT}|Bob saves`,
    `Alice Doe <alice@example.com>|${BOT}|Asserted by Alice`,
    `alice <alice@noreply.cluster.local>|${BOT}|Alice edits two maps`,
  ]);
  assert.equal((await git(c.dir, 'show', '--stat', '--format=', 'HEAD~2')).trim().split('\n').length, 3, 'the first commit holds both maps');
  const sha = (await alice(['get', 'creq', '-n', 'team-a', 'alice-save', '-o', 'jsonpath={.status.sha}'])).stdout;
  assert.equal(sha, (await git(c.dir, 'rev-parse', 'HEAD~2')).trim());
});
