// A change recorded in its window record whose informer event never reaches the windows controller
// must still be committed (src/controllers/windows/resync.ts). Every other wake-up — the record's
// event, a timer, a fact — is what the controller counts on; the 10,000-tenant bench once saw one
// edit of 1,000 acknowledged and never committed. The lost event is injected at the Store's watch
// (the windows informer's only feed), against a real redis-server, the real controllers and a real
// `git http-backend` remote: without the resync the change stays pending forever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { COMMITTER, createGitSecret, createGitTarget, gitServer, startHarness, tempDir, waitFor } from './harness.js';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { WINDOWS_RESOURCE, type WindowRecord } from '../../src/controllers/windows/record.js';
import type { PendingChange } from '../../src/controllers/windows/types.js';
import type { Store, WatchCallbacks } from '../../src/storage/types.js';
import { withOverrides } from '../support/overrides.js';
import { Registry } from 'prom-client';
import { startRedis } from '../support/redis.js';

const RESYNC_MS = 300;

function edit(name: string, value: string): PendingChange {
  return { op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { value } }, source: { uid: `uid-${name}`, resourceVersion: '7', resource: 'configmaps' } };
}

/** The windows reconciles so far (reverser_controller_reconciles_total). */
async function reconciles(reg: Registry): Promise<number> {
  const m = (await reg.getMetricsAsJSON()).find((x) => x.name === 'reverser_controller_reconciles_total');
  return (m?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((v) => v.labels.controller === 'windows')?.value ?? 0;
}

const holds = (rec: WindowRecord, name: string) => rec.windows?.some((w) => w.changes.some((c) => c.change.op === 'write' && c.change.object.metadata.name === name));

test('windows: a change whose record event was lost is committed by the resync, and said so in the log', { timeout: 60_000 }, async (t) => {
  const srv = await startRedis();
  t.after(() => srv.stop());
  const real = await createRedisStore({ url: srv.url, keyPrefix: 'lost' });
  // The windows informer never hears of the record that first holds `lost`.
  let dropped = 0;
  const store: Store = withOverrides(real, {
    watch: (res, opts, cb: WatchCallbacks) =>
      real.watch(res, opts, res.resource !== WINDOWS_RESOURCE.resource ? cb : {
        ...cb,
        onEvent: (ev) => {
          if (dropped === 0 && holds(ev.object as WindowRecord, 'lost')) {
            dropped++;
            return;
          }
          return cb.onEvent(ev);
        },
      }),
  });
  const lines: string[] = [];
  const remote = await gitServer(t);
  const metrics = new Registry();
  const h = await startHarness(t, { dataDir: tempDir(t, 'lost-wakeup-'), store, controllers: 'windows', windowsResyncMs: RESYNC_MS, logLines: (l) => lines.push(l), metrics });
  await createGitSecret(h.store, remote);
  const { key } = await createGitTarget(h.store, 'tenant', remote.url('config'), { idleSeconds: 0 });
  // The new GitTarget's own reconcile done (one, and no more for 300 ms): nothing else is on its way
  // that could come across the change by chance.
  let last = -1;
  let since = Date.now();
  await waitFor('the new GitTarget reconciled and the controller at rest', async () => {
    const n = await reconciles(metrics);
    if (n !== last) [last, since] = [n, Date.now()];
    return n >= 1 && Date.now() - since >= 300;
  }, 10_000, 25);
  const atRest = await reconciles(metrics);

  const t0 = Date.now();
  await h.running.sink!.add(key, [edit('lost', 'edit-1')]);
  const rec = (await real.get(WINDOWS_RESOURCE, { cluster: '_', namespace: 'team-a', name: 'tenant' })) as WindowRecord;
  assert.ok(holds(rec, 'lost'), 'the change is in the record');
  const log = await waitFor('the commit of the change whose event was lost', async () => {
    const out = await git('/', 'ls-remote', remote.authURL('config'), 'refs/heads/main').catch(() => '');
    if (!out.trim()) return undefined;
    const c = await cloneAndCheck(remote.authURL('config'), 'main');
    const got = c.log.length ? { log: c.log, files: c.files, yaml: await c.read('clusters/dev/team-a/configmaps/lost.yaml') } : undefined;
    c.cleanup();
    return got;
  }, 20_000, 100);
  const ms = Date.now() - t0;
  assert.equal(dropped, 1, 'one record event was dropped');
  assert.ok((await reconciles(metrics)) > atRest);
  assert.deepEqual(log.log, [`${COMMITTER.name} <${COMMITTER.email}>|${COMMITTER.name} <${COMMITTER.email}>|Update configmaps team-a/lost`]);
  assert.deepEqual(log.files, ['clusters/dev/team-a/configmaps/lost.yaml']);
  assert.equal(log.yaml, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lost\n  namespace: team-a\ndata:\n  value: edit-1\n');
  const warned = lines.map((l) => JSON.parse(l) as { msg: string; gitTarget?: string }).filter((l) => l.msg.startsWith('windows: pending changes had no reconcile scheduled'));
  assert.deepEqual(warned.map((l) => l.gitTarget), ['_/team-a/tenant']);
  // Found by the second scan that sees it unscheduled: within three intervals and the commit itself.
  assert.ok(ms < 3 * RESYNC_MS + 10_000, `committed ${ms} ms after the change`);
  t.diagnostic(`committed ${ms} ms after the change (resync every ${RESYNC_MS} ms)`);
});
