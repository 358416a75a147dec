// Per-edit attribution end to end through real processes: one server with --sandbox (its own
// sandbox is the default source; the GitTargets name the hosting route in spec.attribution.auditRoute,
// which takes precedence over the sandbox's own request-path facts), the mirror, the windows and CommitRequest
// controllers, the audit listener (mTLS) and a `git http-backend` remote. People edit with kubectl
// (`--as`); the audit EventLists kube-apiserver's webhook would post are posted to the listener
// with the audit client certificate, shortly after each edit, carrying the uid and resourceVersion
// the edit produced. What landed is read with the git CLI as exact `%an <%ae>|%cn <%ce>|%s` lines.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { commits, ok } from '../mirror/harness.js';
import { auditEvent, eventList, metric, startAuditServer, type AuditServer, type EventOpts } from './ingest-support.js';

const SERVER = 'reverser-apiserver <reverser-apiserver@localhost>';
const UNRESOLVED = 'unknown (attribution unresolved) <attribution-unresolved@configbutler.invalid>';
const GRACE_S = 2;
const NO_FACTS_GRACE_S = 4;

let server: AuditServer;
let kubectl: Kubectl;
let remote: GitServer;

before(async () => {
  remote = await startGitServer();
  server = await startAuditServer(undefined, ['--sandbox', '--controllers=all', `--attribution-grace=${GRACE_S}s`, `--attribution-no-facts-grace=${NO_FACTS_GRACE_S}s`]);
  kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
  await ok(kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'default', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
});

after(async () => {
  kubectl?.cleanup();
  await server?.stop();
  await remote?.close();
});

interface Obj {
  metadata: { uid: string; resourceVersion: string; name: string; namespace: string };
}

/** kubectl as `user`, returning the object the API answered (its uid and new resourceVersion). */
async function as(user: string, args: string[], stdin?: string): Promise<Obj> {
  return JSON.parse(await ok(kubectl, ['--as', user, ...args, '-o', 'json'], stdin)) as Obj;
}

/** What kube-apiserver's audit webhook posts for that request, at once (stageTimestamp now). */
async function audited(user: string, o: Obj, ev: EventOpts = {}): Promise<void> {
  const e = auditEvent({ verb: 'patch', user, namespace: o.metadata.namespace, name: o.metadata.name, uid: o.metadata.uid, responseRV: o.metadata.resourceVersion, ...ev });
  e.stageTimestamp = new Date().toISOString();
  const r = await server.post('/audit-webhook', eventList([e]));
  assert.equal(r.status, 200, r.text);
}

async function gitTarget(ns: string, repo: string, commit: Record<string, unknown>): Promise<string> {
  remote.createBareRepo(repo);
  if (ns !== 'default') {
    await ok(kubectl, ['create', 'namespace', ns]);
    await ok(kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', ns, `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
  }
  for (const n of ['one', 'two', 'three']) await ok(kubectl, ['create', 'configmap', n, '-n', ns, `--from-literal=key=${n}`]);
  await ok(kubectl, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'live', namespace: ns },
    spec: {
      repository: { url: remote.url(repo), secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'live',
      commit: { maxAgeSeconds: 600, ...commit },
      attribution: { auditRoute: 'hosting' },
      resources: [{ group: '', resource: 'configmaps', namespaces: [ns] }],
    },
  }));
  await ok(kubectl, ['wait', '--for=condition=Ready', '-n', ns, 'gittarget/live', '--timeout=60s']);
  const bare = join(remote.root, `${repo}.git`);
  await until(async () => (await commits(bare)).length === 1, 'the snapshot commit', 30_000, 100);
  return bare;
}

async function logLines(repo: string, n: number): Promise<string[]> {
  const bare = join(remote.root, `${repo}.git`);
  await until(async () => (await commits(bare)).length >= n, `${n} commits on ${repo}`, 30_000, 100);
  return (await git(bare, 'log', '--format=%an <%ae>|%cn <%ce>|%s', 'main')).split('\n').filter(Boolean);
}

async function auditCondition(ns: string): Promise<{ status: string; reason: string; message: string } | undefined> {
  const gt = JSON.parse(await ok(kubectl, ['get', 'gittarget', 'live', '-n', ns, '-o', 'json']));
  return (gt.status?.conditions ?? []).find((c: { type: string }) => c.type === 'AuditAttribution');
}

test('alice and bob edit, carol deletes: one commit each, in order, authored by each, committed by the server', { timeout: 180_000 }, async () => {
  await gitTarget('default', 'authors', { idleSeconds: 1 });
  const one = await as('alice', ['patch', 'configmap', 'one', '-n', 'default', '-p', '{"data":{"key":"alice"}}']);
  await audited('alice', one, { extra: { 'configbutler.ai/claims/display-name': ['Alice Doe'], 'configbutler.ai/claims/email': ['alice@example.com'] } });
  const two = await as('bob', ['patch', 'configmap', 'two', '-n', 'default', '-p', '{"data":{"key":"bob"}}']);
  await audited('bob', two);
  assert.deepEqual((await logLines('authors', 3)).slice(0, 2), [
    `bob <bob@noreply.cluster.local>|${SERVER}|Update configmaps default/two`,
    `Alice Doe <alice@example.com>|${SERVER}|Update configmaps default/one`,
  ]);
  const three = await as('carol', ['get', 'configmap', 'three', '-n', 'default']);
  await ok(kubectl, ['--as', 'carol', 'delete', 'configmap', 'three', '-n', 'default']);
  await audited('carol', three, { verb: 'delete' });
  assert.equal((await logLines('authors', 4))[0], `carol <carol@noreply.cluster.local>|${SERVER}|Delete configmaps default/three`);
  const c = await auditCondition('default');
  assert.equal(c?.status, 'True');
  assert.equal(c?.reason, 'FactsArriving');
  assert.ok((await metric(server, 'reverser_attribution_joins_total', { tier: 'exact' })) >= 2);
  assert.equal(await metric(server, 'reverser_attribution_joins_total', { tier: 'delete_uid' }), 1);
  assert.equal(await metric(server, 'reverser_commits_total', { author_kind: 'audit' }), 3);

  // Audit posts stop: the next edit is committed after the grace as unresolved, and the condition turns False.
  const edited = Date.now();
  await as('alice', ['patch', 'configmap', 'one', '-n', 'default', '-p', '{"data":{"key":"lost"}}']);
  assert.equal((await logLines('authors', 5))[0], `${UNRESOLVED}|${SERVER}|Update configmaps default/one`);
  assert.ok(Date.now() - edited >= GRACE_S * 1000);
  await until(async () => (await auditCondition('default'))?.status === 'False', 'AuditAttribution False', 30_000, 250);
  assert.ok(Date.now() - edited >= NO_FACTS_GRACE_S * 1000);
  const f = await auditCondition('default');
  assert.equal(f?.reason, 'NoFactsReceived');
  assert.ok(server.stderr().includes(`no audit facts arrive for a GitTarget's route","gitTarget":"default/live","route":"hosting"`), server.stderr().slice(-2000));
  assert.equal(await metric(server, 'reverser_commits_total', { author_kind: 'unresolved' }), 1);
  // Posts resume: True again.
  const two2 = await as('bob', ['patch', 'configmap', 'two', '-n', 'default', '-p', '{"data":{"key":"bob-2"}}']);
  await audited('bob', two2);
  await until(async () => (await auditCondition('default'))?.status === 'True', 'AuditAttribution True again', 30_000, 250);
  assert.equal((await logLines('authors', 6))[0], `bob <bob@noreply.cluster.local>|${SERVER}|Update configmaps default/two`);
});

test("OnRequest: bob's CommitRequest does not close alice's window; alice's does, with her message", { timeout: 180_000 }, async () => {
  const bare = await gitTarget('team-a', 'requests', { mode: 'OnRequest', idleSeconds: 1 });
  const one = await as('alice', ['patch', 'configmap', 'one', '-n', 'team-a', '-p', '{"data":{"key":"a1"}}']);
  await audited('alice', one);
  const two = await as('alice', ['patch', 'configmap', 'two', '-n', 'team-a', '-p', '{"data":{"key":"a2"}}']);
  await audited('alice', two);
  const creq = (name: string, user: string, message: string, closeDelaySeconds = 0) =>
    ok(kubectl, ['--as', user, 'create', '-f', '-'], JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'team-a' }, spec: { targetRef: { name: 'live' }, message, closeDelaySeconds } }));
  await creq('bob-save', 'bob', 'Bob: save', 2);
  const w = await kubectl.run(['wait', '--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=NothingToCommit', '-n', 'team-a', 'creq/bob-save', '--timeout=30s']);
  assert.equal(w.code, 0, w.stderr);
  assert.equal((await commits(bare)).length, 1, "bob's request committed nothing");
  await creq('alice-save', 'alice', 'Alice: raise both limits');
  const done = await kubectl.run(['wait', '--for=condition=Ready', '-n', 'team-a', 'creq/alice-save', '--timeout=30s']);
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual(await logLines('requests', 2), [`alice <alice@noreply.cluster.local>|${SERVER}|Alice: raise both limits`, `${SERVER}|${SERVER}|Snapshot of team-a/live: 3 objects`]);
  const c = await cloneAndCheck(remote.authURL('requests'), 'main');
  try {
    assert.equal(await git(c.dir, 'diff', '--name-status', 'HEAD~1', 'HEAD'), 'M\tlive/team-a/configmaps/one.yaml\nM\tlive/team-a/configmaps/two.yaml\n');
  } finally {
    c.cleanup();
  }
});
