// GitTargets commit in parallel, outside the windows queue's slots (src/controllers/windows/
// controller.ts WINDOWS_CONCURRENCY, WINDOWS_COMMITS_IN_FLIGHT): a tenant whose remote never answers
// holds its own commit, not everyone's. More GitTargets than the queue has slots push to a remote
// that accepts connections and never answers (each commit waits out the 12 s headers limit); one
// more, on a healthy git http-backend, still gets its edit committed within its idle second plus a
// margin, and the hanging ones still show their failure. Real store, real remotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/storage/index.js';
import { startHostileRemote } from '../support/hostile-remote.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { GT, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';
import { waitMs } from '../support/deadline.js';
import { WINDOWS_CONCURRENCY } from '../../src/controllers/windows/controller.js';

const BOT = 'Reverser Bot <bot@reverser.example>';
const HEADERS_TIMEOUT_MS = 12_000;
/** More than the queue's slots: when a commit held its slot, the healthy one waited for one of them (≥ 12 s). */
const HANGING = WINDOWS_CONCURRENCY + 8;

const lastCommit = (o: KubeObject | undefined) => (o?.status as { lastCommit?: { sha: string } } | undefined)?.lastCommit?.sha;
const repoReady = (o: KubeObject | undefined) => ((o?.status as { conditions?: Array<{ type: string; reason: string }> } | undefined)?.conditions ?? []).find((c) => c.type === 'RepositoryReady');

test('more GitTargets on a remote that never answers than the windows queue has slots do not hold another tenant\'s commit', { timeout: 120_000 }, async (t) => {
  const upstream = await gitServer(t);
  const hanging = await startHostileRemote(upstream.port, 'hang');
  t.after(() => hanging.close());
  const h = await startHarness(t, { dataDir: tempDir(t, 'windows-parallel-'), engine: { remoteLimits: { headersTimeoutMs: HEADERS_TIMEOUT_MS } } });
  await createGitSecret(h.store, upstream);
  // The hanging ones first, so they are ahead of the healthy one in the windows queue.
  for (let i = 0; i < HANGING; i++) {
    const { key } = await createGitTarget(h.store, `stuck-${i}`, hanging.url(`stuck-${i}`), { idleSeconds: 0 });
    await h.running.sink!.add(key, [configMap('a', { v: String(i) })]);
  }
  // The engine opens at most 8 connections to one remote host (src/git/http-client.ts maxSockets):
  // the other hanging commits wait inside it for one, in flight all the same.
  const reached = () => new Set(hanging.requests.map((r) => r.path.split('/')[1]!.replace(/\.git$/, '')));
  await waitFor('the hanging GitTargets\' pushes to reach the remote', () => reached().size >= 8, waitMs(20_000));
  const first = [...reached()];
  const { key } = await createGitTarget(h.store, 'healthy', upstream.url('config'), { idleSeconds: 1 });
  const added = Date.now();
  await h.running.sink!.add(key, [configMap('b', { v: 'healthy' })]);
  const sha = await waitFor('the healthy GitTarget\'s commit', async () => lastCommit(await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'healthy' })), waitMs(HEADERS_TIMEOUT_MS * 3));
  const took = Date.now() - added;
  // idleSeconds 1 + a commit: well inside the headers limit the hanging ones are waiting out (before,
  // with a commit holding its queue slot, it waited for one of them: ≥ 12 s).
  assert.ok(took < Math.min(waitMs(6_000), HEADERS_TIMEOUT_MS - 2_000), `the healthy GitTarget's edit took ${took} ms to commit`);
  const checked = await cloneAndCheck(upstream.authURL('config'), 'main');
  t.after(() => checked.cleanup());
  assert.deepEqual(checked.files, ['clusters/dev/team-a/configmaps/b.yaml']);
  assert.deepEqual(checked.log, [`${BOT}|${BOT}|Update configmaps team-a/b`]);
  assert.equal((await git(checked.dir, 'rev-parse', 'HEAD')).trim(), sha);
  assert.equal(await checked.read('clusters/dev/team-a/configmaps/b.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: team-a\ndata:\n  v: healthy\n');
  // The hanging ones fail on their own: those that reached the remote first say why within their
  // headers limit (the others wait their turn for the engine's connections, 12 s per round); none
  // has a commit.
  for (const name of first) {
    const o = await waitFor(`${name}: RepositoryReady False`, async () => {
      const g = await h.store.get(GT, { cluster: '_', namespace: 'team-a', name });
      return repoReady(g)?.reason === 'Unreachable' ? g : undefined;
    }, waitMs(HEADERS_TIMEOUT_MS * 3));
    assert.equal(lastCommit(o), undefined);
  }
  for (let i = 0; i < HANGING; i++) assert.equal(lastCommit((await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: `stuck-${i}` })) ?? undefined), undefined, `stuck-${i}`);
});
