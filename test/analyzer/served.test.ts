// The served face of the acceptance gate: RepositoryScan, create-only like TokenReview. Its status
// is the same document as the library's and the CLI's for the same repository (the three-face
// contract), it is authorized like a GitTarget's use of a Secret (get on the Secret it names),
// every other verb is 405, nothing is stored, and a repository that cannot be read is a clear
// Status, never a 500.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueClientCert, makeCA } from '../support/pki.js';
import { kubectlFor, startServer, tempDir, type Kubectl } from '../auth-e2e/harness.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { scanRepository, scanFolder, type ScanReport } from '../../src/public/analyzer.js';
import { GIT_ENV, fixtureRepository } from './fixture.js';

const run = promisify(execFile);
const CLI = join(process.cwd(), 'dist/src/cli/main.js');

const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: admins}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-admin}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-admin}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
- {nonResourceURLs: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scanner}
rules:
- {apiGroups: ["configbutler.ai"], resources: ["repositoryscans"], verbs: ["create"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: scanners, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scanner}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: git-creds-reader, namespace: team-a}
rules:
- {apiGroups: [""], resources: ["secrets"], resourceNames: ["git-creds"], verbs: ["get"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-git-creds, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: git-creds-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`;

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let admin: Kubectl;
let alice: Kubectl;
let dave: Kubectl;
let gitServer: GitServer;
let fixture: { gitDir: string; cleanup(): void };

before(async () => {
  const dir = tempDir(ctx, 'served-scan-');
  fixture = await fixtureRepository();
  ctx.after(fixture.cleanup);
  gitServer = await startGitServer();
  ctx.after(() => gitServer.close());
  gitServer.createBareRepo('platform');
  await run('git', ['--git-dir', fixture.gitDir, 'push', '--quiet', gitServer.authURL('platform'), 'main'], { env: GIT_ENV });
  const serverCA = makeCA('scan-serving-ca');
  const clientCA = makeCA('scan-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  // The test's git http-backend is plain http on loopback: credentials over http need the development opt-in.
  const srv = await startServer(ctx, serverCA, ['--allow-insecure-credentials=true', '--sandbox', '--client-ca-file', join(dir, 'client-ca.crt'), '--authorization-mode=RBAC', '--authorization-policy-file', join(dir, 'policy.yaml')]);
  admin = kubectlFor(dir, 'admin', srv.url, serverCA.certPem, issueClientCert(clientCA, 'e2e-admin'));
  alice = kubectlFor(dir, 'alice', srv.url, serverCA.certPem, issueClientCert(clientCA, 'alice'));
  dave = kubectlFor(dir, 'dave', srv.url, serverCA.certPem, issueClientCert(clientCA, 'dave'));
  for (const args of [
    ['create', 'namespace', 'team-a'],
    ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${gitServer.username}`, `--from-literal=password=${gitServer.password}`],
  ]) {
    const r = await admin(args);
    assert.equal(r.code, 0, r.stderr);
  }
});

// --validate=false: kubectl validates a kind whose OpenAPI has no PATCH operation (a create-only
// review, like TokenReview) only after listing CustomResourceDefinitions, which a tenant may not
// do (kube-apiserver answers that list 403 for them too); the server validates anyway (422 below).
const CREATE = ['create', '--validate=false', '-f', '-'];

const scan = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'RepositoryScan', metadata: { name: 'wizard' }, spec });

test('three faces, one answer: the served status, the CLI and the library agree on the same repository', { timeout: 120_000 }, async () => {
  const url = gitServer.url('platform');
  const r = await alice([...CREATE, '-o', 'json'], scan({ repository: { url, secretRef: { name: 'git-creds' } } }));
  assert.equal(r.code, 0, r.stderr);
  const served = JSON.parse(r.stdout) as { metadata: Record<string, unknown>; status: ScanReport };
  assert.deepEqual(served.metadata, { name: 'wizard', namespace: 'team-a' }, 'nothing stored: no uid, no resourceVersion');
  const library = await scanRepository({ repository: fixture.gitDir });
  const cli = await run(process.execPath, [CLI, 'analyze', url, '--format', 'json'], { env: { ...process.env, REVERSER_GIT_USERNAME: gitServer.username, REVERSER_GIT_PASSWORD: gitServer.password } }).then(
    () => assert.fail('the fixture has refused folders: exit 1'),
    (e: { code: number; stdout: string }) => (assert.equal(e.code, 1), JSON.parse(e.stdout) as ScanReport),
  );
  assert.equal(served.status.repository, url);
  assert.deepEqual({ ...served.status, repository: library.repository }, library);
  assert.deepEqual({ ...cli, repository: library.repository }, library);

  // One folder, the same way.
  const one = await alice([...CREATE, '-o', 'json'], scan({ repository: { url, secretRef: { name: 'git-creds' } }, path: 'multi' }));
  assert.equal(one.code, 0, one.stderr);
  assert.deepEqual({ ...(JSON.parse(one.stdout) as { status: ScanReport }).status, repository: undefined }, { ...(await scanFolder({ repository: fixture.gitDir, path: 'multi' })), repository: undefined });
});

test('naming a Secret needs get on it: dave is refused with the missing permission, nothing is read', { timeout: 60_000 }, async () => {
  const before = gitServer.requests.length;
  const r = await dave([...CREATE, '-o', 'json'], scan({ repository: { url: gitServer.url('platform'), secretRef: { name: 'git-creds' } } }));
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr.trim(),
    'Error from server (Forbidden): error when creating "STDIN": secrets "git-creds" is forbidden: User "dave" cannot get resource "secrets" in API group "" in the namespace "team-a": a RepositoryScan that names spec.repository.secretRef uses that Secret: the requester must be allowed to get it',
  );
  assert.equal(gitServer.requests.length, before, 'the remote was never asked');
});

test('create only: get and list are 405, bad input is 422, an unreadable repository a clear Status', { timeout: 60_000 }, async () => {
  const forbidden = await alice(['get', 'repositoryscans']);
  assert.match(forbidden.stderr, /User "alice" cannot list resource "repositoryscans"/, 'authorization comes first, as in kube-apiserver');
  const list = await admin(['get', 'repositoryscans', '-n', 'team-a']);
  assert.equal(list.code, 1);
  assert.match(list.stderr, /Error from server \(MethodNotAllowed\): the server does not allow this method on the requested resource/);
  const bad = await alice(CREATE, scan({ repository: { url: 'local:x' }, path: '../up' }));
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'The RepositoryScan "wizard" is invalid: spec.path: Invalid value: "../up": path must not contain ".."\n');
  const denied = await alice(CREATE, scan({ repository: { url: gitServer.url('platform') } }));
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /Error from server \(BadRequest\): error when creating "STDIN": the repository could not be read: authentication to http:\/\/127\.0\.0\.1:\d+\/platform\.git failed \(HTTP 401\)/);
  const down = await alice(CREATE, scan({ repository: { url: 'http://127.0.0.1:1/none.git' } }));
  assert.equal(down.code, 1);
  assert.match(down.stderr, /Error from server \(ServiceUnavailable\): error when creating "STDIN": the repository could not be read: http:\/\/127\.0\.0\.1:1\/none\.git is unreachable \(ECONNREFUSED\)/);
});
