// The e2e policy fixture means what the e2e test expects, and the policy file is re-read on change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAuthorization } from '../../src/auth/authorization.js';
import { checkAssertAuthor } from '../../src/auth/assert-author.js';
import type { Attributes, UserInfo } from '../../src/auth/types.js';
import { until } from '../support/deadline.js';
import { watchFileContent } from '../../src/auth/filewatch.js';

// Fixtures stay in the source tree (tsc does not copy YAML); dist/test/auth -> test/auth.
const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '../../../test/auth/fixtures/rbac-policy.yaml');
const user = (name: string): UserInfo => ({ username: name, groups: ['system:authenticated'] });
const creq = (u: UserInfo, verb: string, ns = 'team-a'): Attributes =>
  ({ user: u, verb, resourceRequest: true, apiGroup: 'configbutler.ai', apiVersion: 'v1alpha1', resource: 'commitrequests', namespace: ns });

test('e2e RBAC fixture and policy reload', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rbac-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'policy.yaml');
  copyFileSync(FIXTURE, path);
  const logs: string[] = [];
  const logger = { info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) };
  const built = await buildAuthorization({ mode: 'RBAC', policyFile: path, policyPollIntervalMs: 30, allowCacheTTLMs: 0, denyCacheTTLMs: 0,
    alwaysAllowPaths: ['/healthz'] }, { logger });
  t.after(() => built.close());
  const az = built.authorizer;
  const [alice, bob, carol] = [user('alice'), user('bob'), user('carol')];

  assert.equal((await az.authorize(creq(alice, 'create'))).decision, 'allow');
  assert.equal((await az.authorize(creq(bob, 'create'))).decision, 'allow');
  assert.equal((await az.authorize(creq(carol, 'list'))).decision, 'noopinion');
  assert.equal((await az.authorize(creq(alice, 'create', 'team-b'))).decision, 'noopinion');
  assert.deepEqual(await checkAssertAuthor(az, alice, 'team-a', 'tenants'), { allowed: true });
  const other = await checkAssertAuthor(az, alice, 'team-a', 'other');
  assert.ok(!other.allowed && other.message.includes('resourceNames: ["other"]'));
  const b = await checkAssertAuthor(az, bob, 'team-a', 'tenants');
  assert.ok(!b.allowed && b.message.includes('User "bob"') && b.message.includes('GitTarget "tenants"')
    && b.message.includes('apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]'));
  assert.equal((await az.authorize({ user: carol, verb: 'get', resourceRequest: false, path: '/apis/configbutler.ai/v1alpha1' })).decision, 'allow');

  // Grant bob assert-author by editing the file; no restart.
  const text = readFileSync(path, 'utf8').replace('- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n---\n# The test harness',
    '- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}\n---\n# The test harness');
  assert.notEqual(text, readFileSync(path, 'utf8'));
  writeFileSync(path, text);
  await until(async () => (await checkAssertAuthor(az, bob, 'team-a', 'tenants')).allowed, 'the edited policy to grant bob assert-author', 5000);
  assert.deepEqual(await checkAssertAuthor(az, bob, 'team-a', 'tenants'), { allowed: true });

  // A broken edit keeps the last good policy. Wait until the server has read it (it logs the refusal),
  // so the check below runs after the reload attempt, not before it.
  const invalid = `authorization: RBAC policy ${path} changed but is invalid, keeping the previous policy: `;
  writeFileSync(path, 'kind: Role\n');
  await until(() => logs.some((l) => l.startsWith(invalid)), 'the invalid policy to be read and refused', 5000);
  assert.deepEqual(await checkAssertAuthor(az, bob, 'team-a', 'tenants'), { allowed: true });
  assert.equal((await az.authorize(creq(alice, 'create'))).decision, 'allow');
  // A server cannot start on it.
  await assert.rejects(buildAuthorization({ mode: 'RBAC', policyFile: path, policyPollIntervalMs: 30, allowCacheTTLMs: 0, denyCacheTTLMs: 0, alwaysAllowPaths: [] }, { logger }),
    /--authorization-policy-file: .*must have apiVersion/);

  // And the watch goes on: the next valid edit (bob's grant removed again) applies.
  writeFileSync(path, readFileSync(FIXTURE, 'utf8'));
  await until(async () => !(await checkAssertAuthor(az, bob, 'team-a', 'tenants')).allowed, 'the restored policy to deny bob again', 5000);
});

test('a file edited right after its watch starts is re-read (the baseline is the stat at start)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'filewatch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'f');
  writeFileSync(path, 'one');
  const seen: string[] = [];
  const stop = watchFileContent(path, 20, (text) => seen.push(text), (e) => seen.push(`error ${e.message}`));
  t.after(stop);
  writeFileSync(path, 'two!'); // before any poll has run
  await until(() => seen.length > 0, 'the edit to be noticed', 5000);
  assert.deepEqual(seen, ['two!']);
});

// Between the minute's polls, the watch of the file's directory sees edits at once, including a
// Kubernetes volume's atomic swap: `f -> ..data/f`, and a new `..data` symlink renamed over the old.
test('a followed file polled once a minute: an edit and an atomic ..data swap are re-read within 2 s', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'filewatch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const version = (name: string, text: string) => {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'f'), text);
  };
  version('..v1', 'one');
  symlinkSync('..v1', join(dir, '..data'));
  symlinkSync('..data/f', join(dir, 'f'));
  const seen: string[] = [];
  const stop = watchFileContent(join(dir, 'f'), 60_000, (text) => seen.push(text), (e) => seen.push(`error ${e.message}`));
  t.after(stop);
  version('..v2', 'two!');
  symlinkSync('..v2', join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  await until(() => seen.includes('two!'), 'the swap to be noticed', 2000);
  assert.deepEqual(seen, ['two!']);
  // A plain file edited in place (how editors and `kubectl cp` change one).
  writeFileSync(join(dir, 'g'), 'one');
  const seenG: string[] = [];
  const stopG = watchFileContent(join(dir, 'g'), 60_000, (text) => seenG.push(text), (e) => seenG.push(`error ${e.message}`));
  t.after(stopG);
  writeFileSync(join(dir, 'g'), 'three');
  await until(() => seenG.length > 0, 'the edit to be noticed', 2000);
  assert.deepEqual(seenG, ['three']);
});
