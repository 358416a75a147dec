// A GitTarget carries its author's authority (docs/security.md): the attacks of a namespace
// editor who writes a GitTarget to read what they cannot, re-run against one `serve --sandbox`
// under RBAC. bob (edit in team-a only) asks for finance, or for every namespace; dave (no
// Secrets) names a Secret for credentials; each is refused with kube's Forbidden wording and
// nothing is stored. The control: bob mirroring his own team-a gets exactly its ConfigMap, under
// his recorded authority (a client-sent status.authority is ignored); when his grant is removed
// the mirror stops within the re-verify interval and says why, and resumes when it returns.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { commits, files, git } from '../mirror/harness.js';
import { GT_PATH, gitTargetBody, startAuthorityServer, statusOf, tenantPolicy, type AuthorityServer, type Tenant } from './authority-support.js';

const REVERIFY_S = 2;
const IDLE = 1;
const POLICY = tenantPolicy([
  { user: 'bob', namespace: 'team-a', role: 'tenant-edit' },
  { user: 'dave', namespace: 'team-a', role: 'tenant-edit' },
]);
const WITHOUT_BOB = tenantPolicy([{ user: 'dave', namespace: 'team-a', role: 'tenant-edit' }]);

let dir: string;
let remote: GitServer;
let env: AuthorityServer;
let bob: Tenant;
let dave: Tenant;

const configMaps = (namespaces?: string[]) => [{ group: '', resource: 'configmaps', ...(namespaces ? { namespaces } : {}) }];
const forbidden = (message: string) => ({ code: 403, reason: 'Forbidden', message });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'authority-requester-'));
  remote = await startGitServer({ anonymous: true });
  remote.createBareRepo('bob');
  env = await startAuthorityServer(dir, POLICY, ['--controllers=all', `--authority-reverify-interval=${REVERIFY_S}s`]);
  bob = env.tenant('bob');
  dave = env.tenant('dave');
  for (const ns of ['team-a', 'finance']) {
    assert.equal((await env.admin('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })).status, 201);
  }
  const cm = (ns: string, name: string, data: Record<string, string>) => env.admin('POST', `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data });
  assert.equal((await cm('finance', 'payroll', { 'db-password': 'hunter2' })).status, 201);
  assert.equal((await cm('team-a', 'app-config', { color: 'blue' })).status, 201);
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-creds', namespace: 'team-a' }, stringData: { username: 'dbadmin', password: 'S3cr3t-DB-Pa55' } };
  assert.equal((await env.admin('POST', '/api/v1/namespaces/team-a/secrets', secret)).status, 201);
});

after(async () => {
  await env?.server.stop();
  await remote?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('bob, refused ConfigMaps in finance, cannot mirror finance from team-a (also dryRun, also as an impersonated bob)', { timeout: 60_000 }, async () => {
  assert.equal((await bob.req('GET', '/api/v1/namespaces/finance/configmaps')).status, 403);
  const steal = gitTargetBody('steal', 'team-a', { repository: { url: remote.url('bob') }, resources: configMaps(['finance']) });
  const want = forbidden('gittargets.configbutler.ai "steal" is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "finance"');
  assert.deepEqual(statusOf(await bob.req('POST', GT_PATH('team-a'), steal)), want);
  assert.deepEqual(statusOf(await bob.req('POST', `${GT_PATH('team-a')}?dryRun=All`, steal)), want);
  // Impersonation: the check is the impersonated user's (dev admin may impersonate).
  const { request } = await import('../auth-e2e/harness.js');
  const asBob = await request(env.server.url, env.server.ca, GT_PATH('team-a'), { method: 'POST', cert: { certPem: env.server.cert, keyPem: env.server.key }, headers: [['Impersonate-User', 'bob']], body: steal });
  assert.deepEqual(statusOf(asBob), want);
  assert.equal((await env.admin('GET', `${GT_PATH('team-a')}/steal`)).status, 404, 'nothing was stored');
});

test('bob cannot mirror every namespace (no namespaces = the cluster-wide grant)', { timeout: 60_000 }, async () => {
  const all = gitTargetBody('everything', 'team-a', { repository: { url: remote.url('bob') }, resources: configMaps() });
  assert.deepEqual(
    statusOf(await bob.req('POST', GT_PATH('team-a'), all)),
    forbidden('gittargets.configbutler.ai "everything" is forbidden: User "bob" cannot list resource "configmaps" in API group "" at the cluster scope'),
  );
  assert.equal((await env.admin('GET', `${GT_PATH('team-a')}/everything`)).status, 404);
});

test('dave, refused Secrets, cannot have the server use db-creds (repository or kubeconfig source)', { timeout: 60_000 }, async () => {
  assert.equal((await dave.req('GET', '/api/v1/namespaces/team-a/secrets/db-creds')).status, 403);
  const want = (name: string) => forbidden(`gittargets.configbutler.ai "${name}" is forbidden: User "dave" cannot get resource "secrets" in API group "" in the namespace "team-a"`);
  const creds = gitTargetBody('creds', 'team-a', { repository: { url: 'https://127.0.0.1:9/dave.git', secretRef: { name: 'db-creds' } }, resources: configMaps(['team-a']) });
  assert.deepEqual(statusOf(await dave.req('POST', GT_PATH('team-a'), creds)), want('creds'));
  const source = gitTargetBody('source', 'team-a', { repository: { url: remote.url('bob') }, source: { kubeConfig: { secretRef: { name: 'db-creds' } } }, resources: configMaps(['team-a']) });
  assert.deepEqual(statusOf(await dave.req('POST', GT_PATH('team-a'), source)), want('source'));
  for (const n of ['creds', 'source']) assert.equal((await env.admin('GET', `${GT_PATH('team-a')}/${n}`)).status, 404);
});

test('control: bob mirrors his own team-a under his recorded authority; widening it is refused; revoked, the mirror stops and says why; restored, it resumes', { timeout: 120_000 }, async () => {
  const mine = gitTargetBody(
    'mine', 'team-a',
    { repository: { url: remote.url('bob') }, commit: { idleSeconds: IDLE }, resources: configMaps(['team-a']) },
    { status: { authority: { username: 'admin', groups: ['system:masters'], verifiedAt: '2020-01-01T00:00:00Z' } } },
  );
  const created = await bob.req('POST', GT_PATH('team-a'), mine);
  assert.equal(created.status, 201, created.text);
  const authority = created.json().status.authority;
  // A client certificate's user carries kube's credential-id extra (the certificate's SHA-256), recorded with the rest.
  const credentialId = `X509SHA256=${new X509Certificate(bob.cert.certPem).fingerprint256.replace(/:/g, '').toLowerCase()}`;
  assert.deepEqual(
    { ...authority, verifiedAt: undefined },
    { username: 'bob', groups: ['system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': [credentialId] }, verifiedAt: undefined },
  );
  assert.ok(Date.now() - Date.parse(authority.verifiedAt) < 30_000);

  const repo = join(remote.root, 'bob.git');
  const cond = async (type: string) => ((await env.admin('GET', `${GT_PATH('team-a')}/mine`)).json().status?.conditions ?? []).find((c: { type: string }) => c.type === type);
  await until(async () => (await cond('Ready'))?.status === 'True', 'mine Ready', 40_000, 100);
  assert.deepEqual(await files(repo), ['live/team-a/configmaps/app-config.yaml']);
  assert.equal(await git(repo, 'show', 'main:live/team-a/configmaps/app-config.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: team-a\ndata:\n  color: blue\n');
  assert.deepEqual(await commits(repo), ['Snapshot of team-a/mine: 1 object']);

  // The status subresource cannot move the authority either.
  const cur = (await bob.req('GET', `${GT_PATH('team-a')}/mine`)).json();
  const forged = { ...cur, status: { ...cur.status, authority: { username: 'admin', groups: ['system:masters'], verifiedAt: cur.status.authority.verifiedAt } } };
  const put = await bob.req('PUT', `${GT_PATH('team-a')}/mine/status`, forged);
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(put.json().status.authority, authority);

  // Widening what is read is a new authorization; refused, nothing changes.
  const widen = await bob.req('PATCH', `${GT_PATH('team-a')}/mine`, { spec: { resources: configMaps(['team-a', 'finance']) } }, 'application/merge-patch+json');
  assert.deepEqual(statusOf(widen), forbidden('gittargets.configbutler.ai "mine" is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "finance"'));
  assert.deepEqual((await env.admin('GET', `${GT_PATH('team-a')}/mine`)).json().spec.resources, configMaps(['team-a']));

  // Revoked: within one re-verify interval (plus the policy file's 1 s poll and margins for a loaded machine).
  const t0 = Date.now();
  env.setPolicy(WITHOUT_BOB);
  await until(async () => (await cond('Ready'))?.reason === 'AuthorityRevoked', 'the mirror stopped for AuthorityRevoked', 20_000, 100);
  const stoppedAfter = Date.now() - t0;
  assert.ok(stoppedAfter < (2 * REVERIFY_S + 1) * 1000 + 4_000, `stopped after ${stoppedAfter} ms`);
  const validated = await cond('Validated');
  assert.deepEqual({ status: validated.status, reason: validated.reason, message: validated.message }, {
    status: 'False',
    reason: 'AuthorityRevoked',
    message: 'the authority of User "bob" is revoked: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team-a"; nothing is mirrored until the grant returns or a user who holds it updates the spec',
  });
  // An edit made now is not read: nothing new reaches Git (bounded wait: idle window + margins).
  assert.equal((await env.admin('POST', '/api/v1/namespaces/team-a/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late', namespace: 'team-a' }, data: { k: 'v' } })).status, 201);
  await new Promise((r) => setTimeout(r, (IDLE + 3) * 1000));
  assert.deepEqual(await files(repo), ['live/team-a/configmaps/app-config.yaml']);

  // Restored: the next pass confirms the grant and the mirror resumes.
  env.setPolicy(POLICY);
  await until(async () => (await cond('Ready'))?.status === 'True', 'the mirror resumed', 30_000, 100);
  await until(async () => (await files(repo)).includes('live/team-a/configmaps/late.yaml'), 'the edit made while revoked is mirrored once resumed', 20_000, 100);
  assert.deepEqual(await files(repo), ['live/team-a/configmaps/app-config.yaml', 'live/team-a/configmaps/late.yaml']);
});
