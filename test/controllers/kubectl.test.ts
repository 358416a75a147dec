// CommitRequests with the real kubectl against a real server process: create, `kubectl wait
// --for=condition=Ready`, the printer columns, a missing GitTarget failing at once, and the
// pushed commit checked on a fresh clone. Pending changes are seeded into the server's store
// before it starts (the mirror that produces them in production is tested on its own).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { startServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { configMap, createGitSecret, createGitTarget, gitServer, waitFor } from './harness.js';

test('kubectl: create a CommitRequest, wait for Ready, read its columns; a missing GitTarget fails at once', { timeout: 90_000 }, async (t) => {
  const remote = await gitServer(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'creq-kubectl-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = await createStore({ storage: 'embedded', dataDir });
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  await new StoreWindowSink(new WindowRecords(store), () => undefined).add(key, [configMap('app', { replicas: '3' }), configMap('db', { size: '10Gi' })]);
  await store.close();

  const srv = await startServer(['--controllers=all', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example', '--log-level=info'], { dataDir });
  t.after(() => srv.stop());
  const k = new Kubectl(kubectlBinary(), srv.kubeconfig);
  t.after(() => k.cleanup());
  const manifest = (name: string, target: string) =>
    JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'team-a' }, spec: { targetRef: { name: target }, message: 'Scale app, grow db' } });

  const created = await k.run(['create', '-f', '-'], { stdin: manifest('save', 'tenants') });
  assert.equal(created.stdout, 'commitrequest.configbutler.ai/save created\n', created.stderr);
  const waited = await k.run(['wait', '--for=condition=Ready', '-n', 'team-a', 'creq/save', '--timeout=30s'], { timeoutMs: 40_000 });
  assert.equal(waited.stdout, 'commitrequest.configbutler.ai/save condition met\n', waited.stderr);

  const c = await cloneAndCheck(remote.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, ['admin <admin@noreply.cluster.local>|Reverser Bot <bot@reverser.example>|Scale app, grow db']);
  const sha = (await git(c.dir, 'rev-parse', 'HEAD')).trim();
  const got = await k.run(['get', 'creq', '-n', 'team-a', 'save', '--no-headers', '-o', 'custom-columns=READY:.status.conditions[?(@.type=="Ready")].status,SHA:.status.sha,BRANCH:.status.branch']);
  assert.equal(got.stdout.trim().split(/\s+/).join(' '), `True ${sha} main`);
  const table = await k.run(['get', 'creq', '-n', 'team-a']);
  const [header, row] = table.stdout.trim().split('\n').map((l) => l.trim().split(/\s{2,}/));
  assert.deepEqual(header, ['NAME', 'GITTARGET', 'READY', 'REASON', 'SHA', 'AUTHOR', 'AGE']);
  assert.deepEqual(row!.slice(0, 6), ['save', 'tenants', 'True', 'Committed', sha.slice(0, 7), 'admin']);

  const t0 = Date.now();
  assert.equal((await k.run(['create', '-f', '-'], { stdin: manifest('orphan', 'nope') })).stdout, 'commitrequest.configbutler.ai/orphan created\n');
  const msg = await waitFor('orphan to fail', async () => {
    const r = await k.run(['get', 'creq', '-n', 'team-a', 'orphan', '-o', 'jsonpath={.status.conditions[?(@.type=="Stalled")].status}/{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}']);
    return r.stdout.startsWith('True/') ? r.stdout : undefined;
  }, 5_000, 100);
  assert.equal(msg, 'True/Failed: GitTarget "nope" not found in namespace "team-a"');
  assert.ok(Date.now() - t0 < 3_000, `failed after ${Date.now() - t0} ms (kubectl runs included)`);
  // Metrics: commits by author kind, requests by outcome, window size, create→outcome time.
  const metrics = (await srv.get('/metrics')).text;
  for (const line of [
    'reverser_commits_total{author_kind="submitter"} 1',
    'reverser_commitrequests_total{outcome="Committed"} 1',
    'reverser_commitrequests_total{outcome="Failed"} 1',
    'reverser_commit_window_changes_sum 2',
    'reverser_commitrequest_duration_seconds_count 2',
  ]) {
    assert.ok(metrics.split('\n').includes(line), `/metrics lacks ${line}`);
  }
  // The outcome is a log line naming the request, the GitTarget and the sha.
  await waitFor('outcome log line', () => srv.stderr().includes('"msg":"CommitRequest Committed","commitRequest":"team-a/save","gitTarget":"team-a/tenants","outcome":"Committed","sha":"' + sha + '"'), 5_000);
});
