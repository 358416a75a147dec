// Events on one machine: `serve --sandbox` with every controller writes its Events into the
// sandbox's core/v1 events, and `kubectl describe gittarget` / `describe commitrequest` against the
// server list them (kubectl's involvedObject.* field selectors). A commit shows Normal Committed
// with its sha; a push that fails shows Warning PushFailed with why, repeated failures counted on
// one Event; a CommitRequest shows its outcome.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { waitFor } from '../controllers/harness.js';
import { commits, git, ok } from '../mirror/harness.js';

let server: StartedServer;
let kubectl: Kubectl;
let remote: GitServer;
const FROM = 'configbutler.ai/reverser-apiserver';

before(async () => {
  remote = await startGitServer();
  remote.createBareRepo('team-a');
  server = await startServer(['--sandbox', '--controllers=all']);
  kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
  await ok(kubectl, ['create', 'namespace', 'team-a']);
  await ok(kubectl, ['create', 'configmap', 'one', '-n', 'team-a', '--from-literal=key=one']);
  await ok(kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
});

after(async () => {
  kubectl?.cleanup();
  await server?.stop();
  await remote?.close();
});

const gitTarget = (name: string, url: string, mode = 'Auto') =>
  JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: 'team-a' },
    spec: {
      repository: { url, secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'live',
      commit: { mode, idleSeconds: 1, maxAgeSeconds: 600 },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  });

/** The rows of the Events table of `kubectl describe`, as [type, reason, age, from, message]. */
async function describedEvents(kind: string, name: string): Promise<string[][]> {
  const out = await ok(kubectl, ['describe', kind, name, '-n', 'team-a']);
  const at = out.indexOf('\nEvents:');
  assert.ok(at >= 0, out);
  const lines = out.slice(at + 1).split('\n').slice(1).filter((l) => l.trim() && !/^\s+(Type|----)\s/.test(l));
  return lines.map((l) => l.trim().split(/\s{2,}/));
}

test('kubectl describe gittarget shows Normal Committed with the sha of the snapshot commit', { timeout: 90_000 }, async () => {
  await ok(kubectl, ['apply', '-f', '-'], gitTarget('team-a', remote.url('team-a')));
  const bare = join(remote.root, 'team-a.git');
  await until(async () => (await commits(bare)).length === 1, 'the snapshot pushed', 40_000, 100);
  const sha = (await git(bare, 'rev-parse', 'main')).trim();
  const rows = await waitFor('the Committed event', async () => {
    const r = await describedEvents('gittarget', 'team-a');
    return r.length ? r : undefined;
  }, 10_000, 200);
  assert.equal(rows.length, 1, JSON.stringify(rows));
  const [type, reason, age, from, message] = rows[0]!;
  assert.deepEqual([type, reason, from, message], ['Normal', 'Committed', FROM, `Committed ${sha} to main: Snapshot of team-a/team-a: 1 object`]);
  assert.match(age!, /^\d+s$/);
  // The same Event through both APIs' field selectors as kubectl sends them.
  const uid = JSON.parse(await ok(kubectl, ['get', 'gt', 'team-a', '-n', 'team-a', '-o', 'json'])).metadata.uid;
  const listed = JSON.parse(await ok(kubectl, ['get', '--raw', `/api/v1/namespaces/team-a/events?fieldSelector=involvedObject.name%3Dteam-a,involvedObject.namespace%3Dteam-a,involvedObject.kind%3DGitTarget,involvedObject.uid%3D${uid}`]));
  assert.equal(listed.items.length, 1);
  assert.deepEqual(listed.items[0].involvedObject, { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace: 'team-a', name: 'team-a', uid });
  assert.equal(listed.items[0].reportingComponent, FROM);
  const other = JSON.parse(await ok(kubectl, ['get', '--raw', '/api/v1/namespaces/team-a/events?fieldSelector=involvedObject.uid%3Dnot-this-one']));
  assert.equal(other.items.length, 0);
});

test('kubectl describe gittarget shows Warning PushFailed with why, repeats counted on one Event; describe creq shows its outcome', { timeout: 90_000 }, async () => {
  // A repository that does not exist on the git server: every push attempt fails the same way.
  await ok(kubectl, ['apply', '-f', '-'], gitTarget('broken', remote.url('missing')));
  const rows = await waitFor('the PushFailed event seen twice', async () => {
    const r = await describedEvents('gittarget', 'broken');
    return r.length && / \(x([2-9]|\d\d+) over /.test(r[0]![2]!) ? r : undefined;
  }, 60_000, 500);
  assert.equal(rows.length, 1, JSON.stringify(rows));
  const [type, reason, age, from, message] = rows[0]!;
  assert.deepEqual([type, reason, from], ['Warning', 'PushFailed', FROM]);
  assert.match(age!, /^\d+s \(x\d+ over \d+s\)$/);
  assert.equal(message, `NotFound: repository ${remote.url('missing')} not found (HTTP 404)`);

  await ok(kubectl, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name: 'nothing', namespace: 'team-a' }, spec: { targetRef: { name: 'team-a' }, message: 'Save' } }));
  const creq = await waitFor('the CommitRequest outcome event', async () => {
    const r = await describedEvents('commitrequest', 'nothing');
    return r.length ? r : undefined;
  }, 30_000, 200);
  assert.deepEqual(creq.map(([t, r, , f, m]) => [t, r, f, m]), [['Normal', 'NothingToCommit', FROM, 'no pending change was collected for this request within its close delay; nothing to commit']]);
});

test('kubectl describe gittarget shows Warning SourceUnreachable when its source cannot be reached, with no credential in it', { timeout: 90_000 }, async () => {
  // The server's own admin kubeconfig (client certificate and key inline), pointed at a port nothing listens on.
  const kubeconfig = readFileSync(server.kubeconfig, 'utf8').replace(/server: https:\/\/[^\s]+/, 'server: https://127.0.0.1:1');
  await ok(kubectl, ['create', 'secret', 'generic', 'dead-source', '-n', 'team-a', `--from-literal=value=${kubeconfig}`]);
  const target = JSON.parse(gitTarget('far', remote.url('team-a')));
  target.spec.source = { kubeConfig: { secretRef: { name: 'dead-source' } } };
  target.spec.path = 'far'; // one folder, one GitTarget (the acceptance gate)
  await ok(kubectl, ['apply', '-f', '-'], JSON.stringify(target));
  const rows = await waitFor('the SourceUnreachable event', async () => {
    const r = await describedEvents('gittarget', 'far');
    return r.find((x) => x[1] === 'SourceUnreachable');
  }, 60_000, 500);
  const [type, , , from, message] = rows;
  assert.deepEqual([type, from], ['Warning', FROM]);
  assert.match(message!, /^Unreachable: /);
  const key = /client-key-data: (\S+)/.exec(kubeconfig)![1]!;
  const all = await ok(kubectl, ['get', 'events', '-n', 'team-a', '-o', 'json']);
  assert.ok(!all.includes(key.slice(0, 40)), 'no key material in any Event');
});

test('the sandbox serves events.k8s.io/v1 events: create, list by regarding.*, patch a series; a missing required field is 422', { timeout: 60_000 }, async () => {
  const ev = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({
    apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name, namespace: 'team-a' },
    eventTime: '2026-12-01T12:00:00.000000Z', reportingController: 'example.com/tool', reportingInstance: 'i-1', action: 'Sync', reason: 'Synced',
    regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'one', uid: 'u-1' }, note: 'synced', type: 'Normal', ...extra,
  });
  assert.equal(await ok(kubectl, ['create', '-f', '-'], ev('one.1')), 'event.events.k8s.io/one.1 created\n');
  await ok(kubectl, ['create', '-f', '-'], ev('other.1', { regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'other', uid: 'u-2' } }));
  const listed = JSON.parse(await ok(kubectl, ['get', 'events.v1.events.k8s.io', '-n', 'team-a', '--field-selector', 'regarding.name=one,regarding.kind=ConfigMap', '-o', 'json']));
  assert.deepEqual(listed.items.map((e: { metadata: { name: string } }) => e.metadata.name), ['one.1']);
  await ok(kubectl, ['patch', 'events.v1.events.k8s.io', 'one.1', '-n', 'team-a', '--type=merge', '-p', '{"series":{"count":2,"lastObservedTime":"2026-12-01T12:01:00.000000Z"}}']);
  const patched = JSON.parse(await ok(kubectl, ['get', 'events.v1.events.k8s.io', 'one.1', '-n', 'team-a', '-o', 'json']));
  assert.deepEqual(patched.series, { count: 2, lastObservedTime: '2026-12-01T12:01:00.000000Z' });
  const refused = await kubectl.run(['create', '-f', '-'], { stdin: ev('bad.1', { reportingController: undefined }) });
  assert.equal(refused.code, 1);
  assert.equal(refused.stderr, 'The Event "bad.1" is invalid: reportingController: Required value: reportingController is required\n');
});
