// What a new GitTarget costs in status writes until it is Ready: each write is a read, a
// validation, a compare-and-swap and a watch event to every GitTarget watcher, so at 10,000 new
// GitTargets (bench/scale) each needless one is 10,000 writes. Counted from a watch of every version
// and from the server's own request counter, so the figure does not depend on the machine's load.
// Real server (sandbox as the default source, controllers on) on a real redis-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../support/redis.js';
import { startServer, watch, GV } from '../support/server.js';
import { waitMs } from '../support/deadline.js';
import { createMirror, seedTenants } from '../support/tenants.js';

const TENANTS = ['fresh-a', 'fresh-b', 'fresh-c', 'fresh-d'];

/**
 * Status writes from create to Ready with the snapshot committed: the mirror's first report (its
 * source listed), the windows controller's snapshot commit (lastCommit, RepositoryReady), the
 * mirror's Synced and Ready. There were five: the mirror also wrote "Connecting" before its
 * stream had listed (src/controllers/mirror/controller.ts FIRST_STATUS_MS), and re-wrote the
 * conditions only to move RepositoryReady, which the windows controller had appended last
 * (src/controllers/mirror/status.ts inConditionOrder).
 */
const WRITES_UNTIL_READY = 3;

const summary = (status: any) => (status?.conditions ?? []).map((c: any) => `${c.type}=${c.status}/${c.reason}`);
/** A status with its conditions sorted by type: two versions equal this way differ only in order. */
const unordered = (status: any) => JSON.stringify({ ...status, conditions: [...(status?.conditions ?? [])].sort((a: any, b: any) => a.type.localeCompare(b.type)) });
const readyWithCommit = (o: any) => o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') && o?.status?.lastCommit?.sha !== undefined;

test(`a new GitTarget takes ${WRITES_UNTIL_READY} status writes to Ready, none of them changing only the order of its conditions`, { timeout: 120_000 }, async (t) => {
  const redisServer = await startRedis();
  const server = await startServer(['--storage=redis', '--redis-url', redisServer.url, '--sandbox', '--controllers=all']).catch(async (e) => {
    await redisServer.stop();
    throw e;
  });
  t.after(async () => {
    await server.stop();
    await redisServer.stop();
  });
  await seedTenants(server, TENANTS);
  const rv = (await server.get(`${GV}/gittargets`)).body.metadata.resourceVersion;
  const events = await watch(server, `${GV}/gittargets?watch=true&resourceVersion=${rv}`);
  t.after(() => events.close());
  const updates = async () => Number(/^apiserver_request_total\{verb="update",resource="gittargets",code="200"\} (\d+)$/m.exec((await server.get('/metrics')).text)?.[1] ?? 0);
  const updatesBefore = await updates();
  for (const name of TENANTS) await createMirror(server, name);

  // Every version of every GitTarget until all are Ready with their snapshot committed, then 3 s
  // more: a write after Ready is a write too.
  const versions = new Map<string, any[]>(TENANTS.map((n) => [n, []]));
  const deadline = Date.now() + waitMs(60_000);
  let quietUntil = Infinity;
  for (;;) {
    const left = Math.min(deadline, quietUntil) - Date.now();
    if (left <= 0) break;
    const ev = await events.next(left).catch(() => undefined);
    if (!ev) break;
    const list = versions.get(ev.object.metadata.namespace);
    assert.ok(list, `an event of an unexpected GitTarget: ${JSON.stringify(ev).slice(0, 300)}`);
    list.push(ev);
    if (quietUntil === Infinity && [...versions.values()].every((l) => readyWithCommit(l.at(-1)?.object))) quietUntil = Date.now() + 3_000;
  }
  const shown = (name: string) => versions.get(name)!.map((e) => `${e.type} ${summary(e.object.status).join(' ')}`).join('\n  ');
  for (const name of TENANTS) {
    const list = versions.get(name)!;
    assert.ok(readyWithCommit(list.at(-1)?.object), `${name} was not Ready with its snapshot committed within the deadline:\n  ${shown(name)}`);
    assert.equal(list[0].type, 'ADDED', shown(name));
    const writes = list.slice(1);
    assert.ok(writes.every((e) => e.type === 'MODIFIED'), shown(name));
    for (let i = 1; i < list.length; i++) {
      assert.notEqual(unordered(list[i].object.status), unordered(list[i - 1].object.status), `${name}: version ${i} only reordered the conditions of the one before:\n  ${shown(name)}`);
    }
    assert.equal(writes.length, WRITES_UNTIL_READY, `${name}: status writes until Ready:\n  ${shown(name)}`);
    const last = list.at(-1).object.status;
    assert.deepEqual(summary(last), ['Ready=True/Ready', 'Validated=True/Valid', 'SourceReachable=True/Reachable', 'RepositoryReady=True/Pushed', 'Synced=True/Synced']);
    assert.deepEqual({ streams: last.streams, pendingChanges: last.pendingChanges }, { streams: { ready: 1, total: 1, summary: '1/1' }, pendingChanges: 0 });
  }
  // The server's own count of GitTarget updates (the controllers' status writes count there): the
  // same writes, no other one hidden from the watch.
  assert.equal((await updates()) - updatesBefore, WRITES_UNTIL_READY * TENANTS.length);
});
