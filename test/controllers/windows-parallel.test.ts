// GitTargets commit in parallel (src/controllers/windows/controller.ts WINDOWS_CONCURRENCY): a
// tenant whose remote never answers holds its own commit, not everyone's. Eight GitTargets push
// to a remote that accepts connections and never answers (each commit waits out the 12 s headers
// limit); a ninth, on a healthy git http-backend, still gets its edit committed within its idle
// second plus a margin, and the hanging ones still show their failure. Real store, real remotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/storage/index.js';
import { startHostileRemote } from '../support/hostile-remote.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { GT, configMap, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';
import { waitMs } from '../support/deadline.js';

const BOT = 'Reverser Bot <bot@reverser.example>';
const HEADERS_TIMEOUT_MS = 12_000;
const HANGING = 8;

const lastCommit = (o: KubeObject | undefined) => (o?.status as { lastCommit?: { sha: string } } | undefined)?.lastCommit?.sha;
const repoReady = (o: KubeObject | undefined) => ((o?.status as { conditions?: Array<{ type: string; reason: string }> } | undefined)?.conditions ?? []).find((c) => c.type === 'RepositoryReady');

test('eight GitTargets on a remote that never answers do not hold a ninth tenant\'s commit', { timeout: 120_000 }, async (t) => {
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
  await waitFor('every hanging GitTarget\'s push to reach the remote', () => new Set(hanging.requests.map((r) => r.path.split('/')[1])).size === HANGING, waitMs(20_000));
  const { key } = await createGitTarget(h.store, 'healthy', upstream.url('config'), { idleSeconds: 1 });
  const added = Date.now();
  await h.running.sink!.add(key, [configMap('b', { v: 'healthy' })]);
  const sha = await waitFor('the healthy GitTarget\'s commit', async () => lastCommit(await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'healthy' })), waitMs(HEADERS_TIMEOUT_MS * 3));
  const took = Date.now() - added;
  // idleSeconds 1 + a commit: well inside the headers limit the eight are waiting out (before,
  // with four reconciles at a time, it waited for at least one of them: ≥ 12 s).
  assert.ok(took < Math.min(waitMs(6_000), HEADERS_TIMEOUT_MS - 2_000), `the healthy GitTarget's edit took ${took} ms to commit`);
  const checked = await cloneAndCheck(upstream.authURL('config'), 'main');
  t.after(() => checked.cleanup());
  assert.deepEqual(checked.files, ['clusters/dev/team-a/configmaps/b.yaml']);
  assert.deepEqual(checked.log, [`${BOT}|${BOT}|Update configmaps team-a/b`]);
  assert.equal((await git(checked.dir, 'rev-parse', 'HEAD')).trim(), sha);
  assert.equal(await checked.read('clusters/dev/team-a/configmaps/b.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: team-a\ndata:\n  v: healthy\n');
  // The hanging ones are still failing on their own (nothing pushed, the reason on their status).
  for (let i = 0; i < HANGING; i++) {
    const o = await waitFor(`stuck-${i}: RepositoryReady False`, async () => {
      const g = await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: `stuck-${i}` });
      return repoReady(g)?.reason === 'Unreachable' ? g : undefined;
    }, waitMs(HEADERS_TIMEOUT_MS * 3));
    assert.equal(lastCommit(o), undefined);
  }
});
