// Logical clusters stay apart end to end, with the real kubectl against
// `--server https://127.0.0.1:<port>/clusters/ws-a` and `/clusters/ws-b` of one server (--sandbox,
// every controller on). Each workspace has a GitTarget team-a/mirror and a source ConfigMap
// team-a/settings of the same namespace and name but different data, mirrored to its own
// `git http-backend` remote: each remote gets only its workspace's data; the same names are
// independent objects (uids, resourceVersions); a watch in ws-a never sees ws-b's edits; and the
// commit windows are separate: a CommitRequest in ws-a commits ws-a's pending change only, and
// ws-b's stays pending until ws-b asks.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary, type LongRunning } from '../support/kubectl.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { commits, git } from '../mirror/harness.js';

const WS = ['ws-a', 'ws-b'] as const;
type Ws = (typeof WS)[number];

let server: StartedServer;
let kubectl: Kubectl;
let remote: GitServer;
const watches: LongRunning[] = [];

/** kubectl in one workspace; the call must succeed. */
async function k(ws: Ws, args: string[], stdin?: string): Promise<string> {
  const r = await kubectl.run(['--server', `${server.url}/clusters/${ws}`, ...args], { stdin });
  if (r.code !== 0) throw new Error(`kubectl (${ws}) ${args.join(' ')} failed (${r.code}):\n${r.stderr}${r.stdout}`);
  return r.stdout;
}
const watch = (ws: Ws, args: string[]) => {
  const w = kubectl.start(['--server', `${server.url}/clusters/${ws}`, ...args]);
  watches.push(w);
  return w;
};
const bare = (ws: Ws) => join(remote.root, `${ws}.git`);
const settings = (origin: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  origin: ${origin}\n`;

before(async () => {
  remote = await startGitServer();
  for (const ws of WS) remote.createBareRepo(ws);
  server = await startServer(['--sandbox', '--controllers=all']);
  kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
  for (const ws of WS) {
    await k(ws, ['create', 'namespace', 'team-a']);
    await k(ws, ['create', 'configmap', 'settings', '-n', 'team-a', `--from-literal=origin=${ws}`]);
    await k(ws, ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
    await k(ws, ['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { name: 'mirror', namespace: 'team-a' },
      spec: {
        repository: { url: remote.url(ws), secretRef: { name: 'git-creds' } },
        branch: 'main',
        path: 'live',
        commit: { mode: 'OnRequest', idleSeconds: 1, maxAgeSeconds: 600 },
        resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }],
      },
    }));
  }
});

after(async () => {
  for (const w of watches) await w.stop();
  kubectl?.cleanup();
  await server?.stop();
  await remote?.close();
});

test('each workspace\'s GitTarget mirrors only its own workspace into its own remote', { timeout: 120_000 }, async () => {
  for (const ws of WS) {
    await k(ws, ['wait', '--for=condition=Synced', '-n', 'team-a', 'gittarget/mirror', '--timeout=60s']);
    await until(async () => (await commits(bare(ws))).length === 1, `the snapshot pushed to ${ws}'s remote`, 30_000, 100);
  }
  for (const ws of WS) {
    assert.deepEqual(await commits(bare(ws)), ['Snapshot of team-a/mirror: 1 object']);
    assert.equal(await git(bare(ws), 'ls-tree', '-r', '--name-only', 'main'), 'live/team-a/configmaps/settings.yaml\n');
    assert.equal(await git(bare(ws), 'show', 'main:live/team-a/configmaps/settings.yaml'), settings(ws));
    const cond = JSON.parse(await k(ws, ['get', 'gittarget', 'mirror', '-n', 'team-a', '-o', 'json'])).status.conditions.find((c: { type: string }) => c.type === 'Validated');
    assert.equal(cond.message, `mirroring from logical cluster "${ws}" of the default source (${server.url}/clusters/${ws})`);
  }
});

test('the same namespace/name are independent objects: uids, resourceVersions and watches are per workspace', { timeout: 60_000 }, async () => {
  const meta = async (ws: Ws, kind: string) => (await k(ws, ['get', kind, '-n', 'team-a', '-o', 'jsonpath={.metadata.uid} {.metadata.resourceVersion}'])).split(' ');
  const [cmA, cmB] = [await meta('ws-a', 'configmap/settings'), await meta('ws-b', 'configmap/settings')];
  const [gtA, gtB] = [await meta('ws-a', 'gittarget/mirror'), await meta('ws-b', 'gittarget/mirror')];
  assert.notEqual(cmA[0], cmB[0]);
  assert.notEqual(cmA[1], cmB[1]);
  assert.notEqual(gtA[0], gtB[0]);

  const cmWatch = watch('ws-a', ['get', 'configmap', 'settings', '-n', 'team-a', '-w', '-o', 'jsonpath={.data.origin}{"\\n"}']);
  const gtWatch = watch('ws-a', ['get', 'gittarget', 'mirror', '-n', 'team-a', '-w', '-o', 'jsonpath={.metadata.labels.edit}{"\\n"}']);
  await cmWatch.waitFor((l) => l.includes('ws-a'), 'the ws-a watch to list settings');
  await gtWatch.waitFor((l) => l.length > 0, 'the ws-a watch to list mirror');

  // ws-b's edits first: ws-a's objects keep their resourceVersions and its watches see nothing.
  await k('ws-b', ['patch', 'configmap', 'settings', '-n', 'team-a', '-p', '{"data":{"origin":"ws-b-edited"}}']);
  await k('ws-b', ['label', 'gittarget', 'mirror', '-n', 'team-a', 'edit=ws-b']);
  assert.deepEqual(await meta('ws-a', 'configmap/settings'), cmA);
  assert.equal(await k('ws-b', ['get', 'configmap', 'settings', '-n', 'team-a', '-o', 'jsonpath={.data.origin}']), 'ws-b-edited');
  // Then ws-a's own edits, which its watches must show, after nothing of ws-b's.
  await k('ws-a', ['patch', 'configmap', 'settings', '-n', 'team-a', '-p', '{"data":{"origin":"ws-a-edited"}}']);
  await k('ws-a', ['label', 'gittarget', 'mirror', '-n', 'team-a', 'edit=ws-a']);
  await cmWatch.waitFor((l) => l.includes('ws-a-edited'), 'the ws-a watch to see ws-a\'s edit');
  await gtWatch.waitFor((l) => l.includes('ws-a'), 'the ws-a watch to see ws-a\'s label');
  assert.deepEqual(cmWatch.lines, ['ws-a', 'ws-a-edited']);
  assert.ok(!gtWatch.lines.includes('ws-b'), gtWatch.lines.join('\n'));
  assert.equal(await k('ws-a', ['get', 'gittarget', 'mirror', '-n', 'team-a', '-o', 'jsonpath={.metadata.labels.edit}']), 'ws-a');
});

test('commit windows are per workspace: a CommitRequest in ws-a commits only ws-a\'s change', { timeout: 120_000 }, async () => {
  // Both edits of the previous test are pending in their OnRequest windows (well past idleSeconds).
  assert.deepEqual(await commits(bare('ws-a')), await commits(bare('ws-b')));
  assert.equal((await commits(bare('ws-a'))).length, 1);
  const request = (ws: Ws, name: string, message: string) => k(ws, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'CommitRequest',
    metadata: { name, namespace: 'team-a' },
    spec: { targetRef: { name: 'mirror' }, message },
  }));

  await request('ws-a', 'save', 'ws-a: save settings');
  await k('ws-a', ['wait', '--for=condition=Ready', '-n', 'team-a', 'commitrequest/save', '--timeout=40s']);
  await until(async () => (await commits(bare('ws-a'))).length === 2, 'ws-a\'s requested commit pushed', 20_000, 100);
  assert.equal(await git(bare('ws-a'), 'log', '-1', '--format=%s', 'main'), 'ws-a: save settings\n');
  assert.equal(await git(bare('ws-a'), 'diff', '--name-status', 'main~1', 'main'), 'M\tlive/team-a/configmaps/settings.yaml\n');
  assert.equal(await git(bare('ws-a'), 'show', 'main:live/team-a/configmaps/settings.yaml'), settings('ws-a-edited'));
  // ws-a's CommitRequest is not visible in ws-b, and ws-b's window still holds its edit.
  assert.equal((await kubectl.run(['--server', `${server.url}/clusters/ws-b`, 'get', 'commitrequest', 'save', '-n', 'team-a'])).code, 1);
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal((await commits(bare('ws-b'))).length, 1, 'ws-a\'s CommitRequest committed nothing in ws-b');

  await request('ws-b', 'save', 'ws-b: save settings');
  await k('ws-b', ['wait', '--for=condition=Ready', '-n', 'team-a', 'commitrequest/save', '--timeout=40s']);
  await until(async () => (await commits(bare('ws-b'))).length === 2, 'ws-b\'s requested commit pushed', 20_000, 100);
  assert.equal(await git(bare('ws-b'), 'log', '-1', '--format=%s', 'main'), 'ws-b: save settings\n');
  assert.equal(await git(bare('ws-b'), 'show', 'main:live/team-a/configmaps/settings.yaml'), settings('ws-b-edited'));
  assert.equal(await git(bare('ws-a'), 'show', 'main:live/team-a/configmaps/settings.yaml'), settings('ws-a-edited'));
  const sha = (ws: Ws) => k(ws, ['get', 'commitrequest', 'save', '-n', 'team-a', '-o', 'jsonpath={.status.sha}']);
  assert.equal(await sha('ws-a'), (await git(bare('ws-a'), 'rev-parse', 'main')).trim());
  assert.equal(await sha('ws-b'), (await git(bare('ws-b'), 'rev-parse', 'main')).trim());
});
