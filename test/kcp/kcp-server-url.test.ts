// --kcp-server-url: everything the server asks kcp about a request or a GitTarget
// of logical cluster X goes to `<kcp URL>/clusters/X/...` with the server's kcp credentials:
// TokenReviews and SubjectAccessReviews (cached per logical cluster), the mirror's default source
// (workspace X) and kubeconfig Secrets (read in workspace X); with --kcp-require-apibinding a
// workspace without a Bound APIBinding to our export is refused, and so is one whose bindings
// cannot be read.
//
// "kcp" is the hosting-cluster double: reviews and APIBindings per /clusters/<name>/, every other
// /clusters/<name>/ call proxied to a real `reverser-apiserver sandbox`, which keeps core objects
// per logical cluster. The server's kubeconfig names kcp's workspace root (`<kcp>/clusters/root`,
// as kcp's own admin kubeconfig does): were the flag ignored, every call would land under
// /clusters/root/clusters/X and the exact paths below would not match.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startFakeHostingCluster, type FakeHostingCluster, type SARSpec } from '../support/fake-hosting-cluster.js';
import { GV, startServer, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';
import { commits, git, ok, startSandbox, type Sandbox } from '../mirror/harness.js';
import { startGitServer, type GitServer } from '../support/git-server.js';

const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const TOKENREVIEW = '/apis/authentication.k8s.io/v1/tokenreviews';
const EXPORT = { path: 'root:providers:reverser', name: 'configbutler.ai' };
const bound = { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'configbutler.ai' }, spec: { reference: { export: EXPORT } }, status: { phase: 'Bound' } };
const BOB = { Authorization: 'Bearer bob-token' };

let fake: FakeHostingCluster;
let sandbox: Sandbox;
let server: StartedServer;
let remote: GitServer;

const inWs = (ws: string, args: string[]) => ['--server', `https://127.0.0.1:${sandbox.port}/clusters/${ws}`, ...args];
const gts = (ws: string) => `/clusters/${ws}${GV}/namespaces/team-a/gittargets`;
const paths = (calls: Array<{ path: string }>) => calls.map((c) => c.path);

function target(name: string, source?: Record<string, unknown>, repository: Record<string, unknown> = { url: `local:${name}` }, path = 'mirror') {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: 'team-a' },
    spec: {
      repository,
      branch: 'main',
      path,
      commit: { idleSeconds: 1 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
      ...(source ? { source } : {}),
    },
  };
}

async function condition(ws: string, name: string, type: string): Promise<{ status: string; reason: string; message: string } | undefined> {
  const r = await server.get(`${gts(ws)}/${name}`);
  return r.body?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

before(async () => {
  [fake, sandbox, remote] = await Promise.all([startFakeHostingCluster(), startSandbox(), startGitServer()]);
  remote.createBareRepo('pushed');
  const sk = parse(readFileSync(sandbox.kubeconfig, 'utf8'));
  const b64 = (v: string) => Buffer.from(v, 'base64').toString('utf8');
  fake.workspaces = {
    url: `https://127.0.0.1:${sandbox.port}`,
    caPem: b64(sk.clusters[0].cluster['certificate-authority-data']),
    certPem: b64(sk.users[0].user['client-certificate-data']),
    keyPem: b64(sk.users[0].user['client-key-data']),
  };
  // bob's token is a service-account token of every workspace but ws-b.
  fake.onTokenReview = (token, path) => (token === 'bob-token' && path !== `/clusters/ws-b${TOKENREVIEW}` ? { username: 'bob', groups: ['team-a'] } : false);
  // bob may do anything in ws-a and ws-c (to reach the binding check), nothing anywhere else.
  fake.onSAR = (spec, path) => ({ allowed: spec.user === 'bob' && [`/clusters/ws-a${SAR}`, `/clusters/ws-c${SAR}`, `/clusters/ws-d${SAR}`].includes(path) });
  for (const ws of ['ws-a', 'ws-b']) fake.apiBindings.set(ws, [bound]);
  fake.apiBindings.set('ws-c', [{ ...bound, spec: { reference: { export: { path: 'root:elsewhere', name: 'configbutler.ai' } } } }]);

  // Each workspace's own ConfigMap (and the root's, which no workspace may see).
  for (const ws of ['root', 'ws-a', 'ws-b', 'shared']) {
    await ok(sandbox.kubectl, inWs(ws, ['create', 'namespace', 'team-a']));
    await ok(sandbox.kubectl, inWs(ws, ['create', 'configmap', 'settings', '-n', 'team-a', `--from-literal=origin=${ws}`]));
  }
  // A kubeconfig Secret only in ws-a, naming the sandbox's workspace "shared".
  const shared = structuredClone(sk);
  shared.clusters[0].cluster.server = `https://127.0.0.1:${sandbox.port}/clusters/shared`;
  await ok(sandbox.kubectl, inWs('ws-a', ['create', 'secret', 'generic', 'source', '-n', 'team-a', `--from-literal=value=${JSON.stringify(shared)}`]));
  // The git credentials, also only in ws-a's workspace.
  await ok(sandbox.kubectl, inWs('ws-a', ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]));

  const kubeconfig = join(sandbox.dataDir, 'kcp-root.kubeconfig');
  writeFileSync(kubeconfig, readFileSync(fake.kubeconfigPath, 'utf8').replace(`server: ${fake.url}`, `server: ${fake.url}/clusters/root`));
  server = await startServer(['--controllers=all', '--authorization-mode=Delegated', '--kubeconfig', kubeconfig, '--kcp-server-url', fake.url,
    '--authentication-skip-lookup=true', '--register-apiservice=false', `--kcp-require-apibinding=${EXPORT.path}:${EXPORT.name}`]);
});

after(async () => {
  await server?.stop();
  await sandbox?.destroy();
  await fake?.close();
  await remote?.close();
});

test('a bearer token is reviewed in the workspace it addresses, and SubjectAccessReviews go to that workspace', async () => {
  const n = fake.calls.length;
  const a = await server.request('GET', gts('ws-a'), { anonymous: true, headers: BOB });
  assert.equal(a.status, 200, a.text);
  const again = await server.request('GET', gts('ws-a'), { anonymous: true, headers: BOB });
  assert.equal(again.status, 200, again.text);
  // The same token for ws-b is reviewed in ws-b (not answered from ws-a's cache): ws-b does not know it.
  const b = await server.request('GET', gts('ws-b'), { anonymous: true, headers: BOB });
  assert.equal(b.status, 401, b.text);
  assert.equal(b.body.reason, 'Unauthorized');
  const calls = fake.calls.slice(n);
  assert.deepEqual(paths(calls.filter((c) => c.path.endsWith(TOKENREVIEW))), [`/clusters/ws-a${TOKENREVIEW}`, `/clusters/ws-b${TOKENREVIEW}`]);
  assert.deepEqual(paths(calls.filter((c) => c.path.endsWith(SAR))), [`/clusters/ws-a${SAR}`]);
  const spec = (calls.find((c) => c.path.endsWith(SAR))!.body as { spec: SARSpec }).spec;
  assert.deepEqual([spec.user, spec.groups, spec.resourceAttributes], ['bob', ['team-a', 'system:authenticated'], { namespace: 'team-a', verb: 'list', group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets' }]);
  // Every call carried the server's kcp credentials (the kubeconfig's token).
  assert.ok(calls.every((c) => c.authorization === 'Bearer fake-hosting-sa-token'));
});

test('--kcp-require-apibinding: a workspace without a Bound APIBinding to the export is refused, and so is one whose bindings cannot be read', async () => {
  const c = await server.request('GET', gts('ws-c'), { anonymous: true, headers: BOB });
  assert.equal(c.status, 403, c.text);
  assert.equal(c.body.reason, 'Forbidden');
  assert.equal(c.body.message, 'gittargets.configbutler.ai is forbidden: User "bob" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
    + 'logical cluster "ws-c" has no Bound APIBinding to APIExport root:providers:reverser:configbutler.ai (--kcp-require-apibinding)');
  const lookups = () => paths(fake.calls.filter((x) => x.path.endsWith('/apibindings')));
  const before = lookups().length;
  assert.equal((await server.request('GET', gts('ws-c'), { anonymous: true, headers: BOB })).status, 403);
  assert.equal(lookups().length, before, 'the answer is cached');

  fake.apiBindingsStatus = 500;
  try {
    const d = await server.request('POST', gts('ws-d'), { anonymous: true, headers: BOB, body: target('nope') });
    assert.equal(d.status, 403, d.text);
    assert.match(d.body.message, /: whether logical cluster "ws-d" binds APIExport root:providers:reverser:configbutler\.ai could not be checked \(--kcp-require-apibinding\): GET \/clusters\/ws-d\/apis\/apis\.kcp\.io\/v1alpha2\/apibindings: HTTP 500/);
  } finally {
    delete fake.apiBindingsStatus;
  }
  assert.equal((await server.request('GET', `${gts('ws-d')}/nope`, { anonymous: true, headers: BOB })).status, 403, 'nothing was stored, and the error was not cached as an answer');
  assert.deepEqual(lookups().slice(-1), ['/clusters/ws-d/apis/apis.kcp.io/v1alpha2/apibindings']);
});

test('a GitTarget in logical cluster X mirrors workspace X, and reads its kubeconfig Secret in workspace X', { timeout: 120_000 }, async () => {
  for (const ws of ['ws-a', 'ws-b']) {
    const r = await server.request('POST', gts(ws), { body: target(`own-${ws}`) });
    assert.equal(r.status, 201, r.text);
  }
  for (const ws of ['ws-a', 'ws-b']) {
    const repo = join(server.dataDir, 'git', '_clusters', ws, 'team-a', `own-${ws}.git`);
    await until(async () => (await commits(repo)).length === 1, `own-${ws} snapshot committed`, 60_000, 250);
    assert.equal(await git(repo, 'show', 'main:mirror/team-a/configmaps/settings.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  origin: ${ws}\n`);
    const validated = await condition(ws, `own-${ws}`, 'Validated');
    assert.equal(validated?.message, `mirroring from logical cluster "${ws}" of the default source (${fake.url}/clusters/${ws})`);
  }

  // The Secret "source" exists only in ws-a: there it names the sandbox's "shared"; in ws-b it is not found.
  for (const ws of ['ws-a', 'ws-b']) {
    const r = await server.request('POST', gts(ws), { body: target(`via-secret-${ws}`, { kubeConfig: { secretRef: { name: 'source' } } }) });
    assert.equal(r.status, 201, r.text);
  }
  const viaA = join(server.dataDir, 'git', '_clusters', 'ws-a', 'team-a', 'via-secret-ws-a.git');
  await until(async () => (await commits(viaA)).length === 1, 'via-secret-ws-a snapshot committed', 60_000, 250);
  assert.match(await git(viaA, 'show', 'main:mirror/team-a/configmaps/settings.yaml'), /\n {2}origin: shared\n$/);
  await until(async () => (await condition('ws-b', 'via-secret-ws-b', 'Validated'))?.reason === 'KubeConfigSecretNotFound', 'via-secret-ws-b refused', 30_000, 250);
  assert.deepEqual(await condition('ws-b', 'via-secret-ws-b', 'Validated').then((c) => [c?.status, c?.message]),
    ['False', 'Secret "source" not found in namespace "team-a" in logical cluster "ws-b"']);

  // Every workspace call went to <kcp>/clusters/<ws>/ (never under the kubeconfig's /clusters/root).
  const secretReads = paths(fake.calls.filter((c) => c.path.endsWith('/secrets/source')));
  assert.deepEqual([...new Set(secretReads)].sort(), ['/clusters/ws-a/api/v1/namespaces/team-a/secrets/source', '/clusters/ws-b/api/v1/namespaces/team-a/secrets/source']);
  assert.ok(!fake.calls.some((c) => c.path.startsWith('/clusters/root/clusters/')));
});

test('a GitTarget in logical cluster X reads its git credentials Secret in workspace X', { timeout: 120_000 }, async () => {
  const repository = { url: remote.url('pushed'), secretRef: { name: 'git-creds' } };
  // Each workspace writes its own folder of the one remote (one folder, one GitTarget: the same
  // folder would be refused as a PathConflict before any credentials were read).
  for (const ws of ['ws-a', 'ws-b']) {
    const r = await server.request('POST', gts(ws), { body: target('pushed', undefined, repository, ws === 'ws-a' ? 'mirror' : 'mirror-b') });
    assert.equal(r.status, 201, r.text);
  }
  const bare = join(remote.root, 'pushed.git');
  await until(async () => (await commits(bare)).length === 1, 'ws-a\'s snapshot pushed with ws-a\'s credentials', 60_000, 250);
  assert.deepEqual(await commits(bare), ['Snapshot of team-a/pushed: 1 object']);
  assert.match(await git(bare, 'show', 'main:mirror/team-a/configmaps/settings.yaml'), /\n {2}origin: ws-a\n$/);
  await until(async () => (await condition('ws-b', 'pushed', 'RepositoryReady'))?.status === 'False', 'ws-b\'s push refused', 60_000, 250);
  assert.deepEqual(await condition('ws-b', 'pushed', 'RepositoryReady').then((c) => [c?.reason, c?.message]),
    ['AuthFailed', 'the credentials Secret "git-creds" was not found in namespace "team-a" of logical cluster "ws-b"']);
  assert.deepEqual(await commits(bare), ['Snapshot of team-a/pushed: 1 object'], 'nothing of ws-b reached the remote');
  const reads = paths(fake.calls.filter((c) => c.path.endsWith('/secrets/git-creds')));
  assert.deepEqual([...new Set(reads)].sort(), ['/clusters/ws-a/api/v1/namespaces/team-a/secrets/git-creds', '/clusters/ws-b/api/v1/namespaces/team-a/secrets/git-creds']);
});
