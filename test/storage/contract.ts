// The store contract: every backend runs these same tests (embedded.test.ts, redis.test.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/deadline.js';
import {
  DEFAULT_CLUSTER,
  StorageError,
  type KubeObject,
  type ObjectKey,
  type ResourceRef,
  type Store,
  type StoreEvent,
} from '../../src/storage/types.js';

export interface FixtureOptions {
  /** Event history per resource. */
  retention?: number;
  /** Bookmark interval. */
  progressIntervalMs?: number;
}

export interface StoreFixture {
  store: Store;
  /** Close the store and open a new one on the same durable state (data dir / Redis server). */
  reopen(): Promise<Store>;
  /** A second store on the same backend at the same time (Redis only: several replicas). */
  peer?(): Promise<Store>;
}

export type StoreFactory = (t: TestContext, opts?: FixtureOptions) => Promise<StoreFixture>;

export const CM: ResourceRef = { group: '', resource: 'configmaps' };
export const GT: ResourceRef = { group: 'configbutler.ai', resource: 'gittargets' };

export function cm(name: string, namespace = 'default', data: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}
export function key(name: string, namespace = 'default', cluster = DEFAULT_CLUSTER): ObjectKey {
  return { cluster, namespace, name };
}
export const rvOf = (o: KubeObject): number => Number(o.metadata.resourceVersion);

/** Collects watch events; `next(n)` awaits until n events arrived (no sleeps). */
export class Collector {
  events: StoreEvent[] = [];
  progress: number[] = [];
  closed: StorageError | undefined;
  private waiters: (() => void)[] = [];
  readonly cb = {
    onEvent: (e: StoreEvent) => this.push(() => this.events.push(e)),
    onProgress: (rv: number) => this.push(() => this.progress.push(rv)),
    onClose: (r: StorageError) => this.push(() => (this.closed = r)),
  };
  private push(f: () => void): void {
    f();
    for (const w of this.waiters.splice(0)) w();
  }
  async until(pred: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; have ${JSON.stringify(this.events.map((e) => [e.type, e.rv]))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
  next(n: number): Promise<void> {
    return this.until(() => this.events.length >= n, `${n} events`);
  }
  rvs(): number[] {
    return this.events.map((e) => e.rv);
  }
}

async function rejects(p: Promise<unknown>, code: string): Promise<StorageError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StorageError, `expected StorageError, got ${err}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

export function runStoreContract(name: string, factory: StoreFactory): void {
  test(`${name}: create, get, update, delete and their errors`, async (t) => {
    const { store } = await factory(t);
    const created = await store.create(CM, key('a'), cm('a', 'default', { x: '1' }));
    assert.ok(rvOf(created) > 0);
    assert.deepEqual(created.data, { x: '1' });
    assert.deepEqual(await store.get(CM, key('a')), created);
    assert.equal(await store.get(CM, key('missing')), undefined);
    await rejects(store.create(CM, key('a'), cm('a')), 'AlreadyExists');

    const updated = await store.update(CM, key('a'), { ...created, data: { x: '2' } }, rvOf(created));
    assert.ok(rvOf(updated) > rvOf(created));
    assert.deepEqual((await store.get(CM, key('a')))!.data, { x: '2' });
    const conflict = await rejects(store.update(CM, key('a'), cm('a'), rvOf(created)), 'Conflict');
    assert.equal(conflict.currentRV, rvOf(updated));
    await rejects(store.update(CM, key('nope'), cm('nope'), 1), 'NotFound');

    await rejects(store.delete(CM, key('a'), rvOf(created)), 'Conflict');
    const deleted = await store.delete(CM, key('a'), rvOf(updated));
    assert.ok(rvOf(deleted) > rvOf(updated));
    assert.deepEqual(deleted.data, { x: '2' });
    assert.equal(await store.get(CM, key('a')), undefined);
    await rejects(store.delete(CM, key('a')), 'NotFound');
    assert.equal(await store.currentRV(), rvOf(deleted));
    // Recreating a deleted name works and gets a new RV.
    const again = await store.create(CM, key('a'), cm('a'));
    assert.ok(rvOf(again) > rvOf(deleted));
  });

  test(`${name}: resourceVersion is one monotonic counter across resources and clusters`, async (t) => {
    const { store } = await factory(t);
    const rvs: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = i % 2 ? CM : GT;
      const o = await store.create(res, key(`o${i}`, 'ns', `c${i % 3}`), cm(`o${i}`, 'ns'));
      rvs.push(rvOf(o));
    }
    for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i]! > rvs[i - 1]!, `${rvs}`);
    assert.equal(await store.currentRV(), rvs.at(-1));
    const l = await store.list(GT);
    assert.equal(l.resourceVersion, rvs.at(-1));
  });

  test(`${name}: list is sorted and filtered by cluster and namespace; wildcard cluster`, async (t) => {
    const { store } = await factory(t);
    const specs: [string, string, string][] = [
      ['c2', 'b', 'z'], ['c1', 'b', 'y'], ['c1', 'a', 'x'], ['c2', 'a', 'w'], ['c1', 'a', 'a'], ['c1', 'b', 'a'],
    ];
    for (const [c, ns, n] of specs) await store.create(CM, key(n, ns, c), cm(n, ns));
    await store.create(GT, key('other', 'a', 'c1'), cm('other', 'a'));
    const names = (items: KubeObject[]): string[] => items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    assert.deepEqual(names((await store.list(CM, { cluster: 'c1' })).items), ['a/a', 'a/x', 'b/a', 'b/y']);
    assert.deepEqual(names((await store.list(CM, { cluster: 'c1', namespace: 'b' })).items), ['b/a', 'b/y']);
    assert.deepEqual(names((await store.list(CM, { cluster: 'c2', namespace: 'a' })).items), ['a/w']);
    assert.deepEqual(names((await store.list(CM, { cluster: 'c3' })).items), []);
    // Wildcard: every cluster, ordered by (cluster, namespace, name).
    assert.deepEqual(names((await store.list(CM)).items), ['a/a', 'a/x', 'b/a', 'b/y', 'a/w', 'b/z']);
    assert.deepEqual(names((await store.list(CM, { namespace: 'a' })).items), ['a/a', 'a/x', 'a/w']);
    assert.deepEqual(names((await store.list(CM, { consistency: 'any' })).items).length, 6);
    // Isolation: same name in two clusters are two objects.
    await store.create(CM, key('x', 'a', 'c2'), cm('x', 'a', { from: 'c2' }));
    assert.deepEqual((await store.get(CM, key('x', 'a', 'c1')))!.data, {});
    assert.deepEqual((await store.get(CM, key('x', 'a', 'c2')))!.data, { from: 'c2' });
  });

  test(`${name}: list at an RV reads the snapshot of that RV; older than history is Expired`, async (t) => {
    const { store } = await factory(t, { retention: 5 });
    const a = await store.create(CM, key('a'), cm('a', 'default', { v: '1' }));
    await store.create(CM, key('b'), cm('b'));
    await store.create(CM, key('c', 'other'), cm('c', 'other'));
    const at = (await store.list(CM)).resourceVersion;
    await store.update(CM, key('a'), cm('a', 'default', { v: '2' }), rvOf(a));
    await store.delete(CM, key('b'));
    await store.create(CM, key('d'), cm('d'));
    const snap = await store.list(CM, { atRV: at });
    assert.equal(snap.resourceVersion, at);
    assert.deepEqual(snap.items.map((o) => [o.metadata.name, o.data]), [['a', { v: '1' }], ['b', {}], ['c', {}]]);
    const ns = await store.list(CM, { atRV: at, namespace: 'default' });
    assert.deepEqual(ns.items.map((o) => o.metadata.name), ['a', 'b']);
    const now = await store.list(CM);
    assert.deepEqual(now.items.map((o) => o.metadata.name), ['a', 'd', 'c']); // sorted by namespace, then name
    for (let i = 0; i < 6; i++) await store.create(CM, key(`x${i}`), cm(`x${i}`));
    await rejects(store.list(CM, { atRV: at }), 'Expired');
  });

  test(`${name}: watch replays exactly the events after an RV, then follows live`, async (t) => {
    const { store } = await factory(t);
    const a = await store.create(CM, key('a'), cm('a'));
    const b = await store.create(CM, key('b', 'other'), cm('b', 'other'));
    await store.create(GT, key('g'), cm('g')); // other resource: never seen by a CM watch
    const a2 = await store.update(CM, key('a'), cm('a', 'default', { v: '2' }), rvOf(a));
    const c = await store.create(CM, key('c', 'default', 'c9'), cm('c'));

    const all = new Collector();
    const h = await store.watch(CM, { fromRV: rvOf(a) }, all.cb);
    t.after(() => h.stop());
    await all.next(3);
    assert.deepEqual(all.rvs(), [rvOf(b), rvOf(a2), rvOf(c)]);
    assert.deepEqual(all.events.map((e) => e.type), ['ADDED', 'MODIFIED', 'ADDED']);
    assert.equal(all.events[2]!.cluster, 'c9');

    const scoped = new Collector();
    const h2 = await store.watch(CM, { fromRV: 0, cluster: DEFAULT_CLUSTER, namespace: 'default' }, scoped.cb);
    t.after(() => h2.stop());
    await scoped.next(2);
    assert.deepEqual(scoped.rvs(), [rvOf(a), rvOf(a2)]);

    const d = await store.delete(CM, key('b', 'other'));
    const e = await store.update(CM, key('a'), cm('a', 'default', { v: '3' }), rvOf(a2));
    await all.next(5);
    await scoped.next(3);
    assert.deepEqual(all.rvs(), [rvOf(b), rvOf(a2), rvOf(c), rvOf(d), rvOf(e)]);
    assert.deepEqual(scoped.rvs(), [rvOf(a), rvOf(a2), rvOf(e)]);
    assert.equal(all.events[3]!.type, 'DELETED');
    assert.equal(all.events[3]!.object.metadata.name, 'b');

    // Stopped watchers get nothing more.
    h.stop();
    await store.create(CM, key('late'), cm('late'));
    await scoped.next(4);
    assert.equal(all.events.length, 5);
  });

  test(`${name}: prevObject on MODIFIED and DELETED, live and replayed`, async (t) => {
    const { store } = await factory(t);
    const start = await store.currentRV();
    const live = new Collector();
    const h = await store.watch(CM, { fromRV: start }, live.cb);
    t.after(() => h.stop());
    const a = await store.create(CM, key('a'), cm('a', 'default', { v: '1' }));
    const a2 = await store.update(CM, key('a'), cm('a', 'default', { v: '2' }), rvOf(a));
    await store.delete(CM, key('a'));
    await live.next(3);
    const replay = new Collector();
    const h2 = await store.watch(CM, { fromRV: start }, replay.cb);
    t.after(() => h2.stop());
    await replay.next(3);
    for (const c of [live, replay]) {
      const [added, modified, deleted] = c.events;
      assert.equal(added!.prevObject, undefined);
      assert.deepEqual(modified!.prevObject, a);
      assert.deepEqual(modified!.object, a2);
      assert.deepEqual(deleted!.prevObject, a2);
      assert.deepEqual(deleted!.object.data, { v: '2' });
      assert.equal(rvOf(deleted!.object), deleted!.rv);
    }
  });

  test(`${name}: watch from an RV older than the retained history is Expired`, async (t) => {
    const { store } = await factory(t, { retention: 5 });
    const first = await store.create(CM, key('o0'), cm('o0'));
    const rvs = [rvOf(first)];
    for (let i = 1; i < 12; i++) rvs.push(rvOf(await store.create(CM, key(`o${i}`), cm(`o${i}`))));
    // Events after `oldest` are retained: the last 5. (A cache-backed store knows its retention
    // as of its last consistent read.)
    await store.list(CM);
    const oldest = store.oldestRetainedRV(CM);
    assert.equal(oldest, rvs[6]);
    const err = await rejects(store.watch(CM, { fromRV: rvOf(first) }, new Collector().cb), 'Expired');
    assert.equal(err.currentRV, oldest);
    const ok = new Collector();
    const h = await store.watch(CM, { fromRV: oldest }, ok.cb);
    t.after(() => h.stop());
    await ok.next(5);
    assert.deepEqual(ok.rvs(), rvs.slice(7));
  });

  test(`${name}: idle watchers get progress notifications with the latest RV, once per RV moved past them`, async (t) => {
    const { store } = await factory(t, { progressIntervalMs: 50 });
    await store.create(GT, key('g'), cm('g'));
    const rv = await store.currentRV();
    const c = new Collector();
    const h = await store.watch(CM, { fromRV: rv }, c.cb);
    t.after(() => h.stop());
    // Nothing written since: nothing to tell, for six intervals (no call per watcher at rest).
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(c.progress, []);
    // A write elsewhere moves the RV past the watcher: one notification with it, then none again.
    await store.create(GT, key('g2'), cm('g2'));
    const moved = await store.currentRV();
    await c.until(() => c.progress.includes(moved), 'a progress notification with the new RV');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(c.progress, [moved]);
    assert.equal(c.events.length, 0);
  });

  test(`${name}: leases hand over with an increasing fencing token`, async (t) => {
    const { store } = await factory(t);
    const l1 = await store.acquireLease('repo', 'a', 60_000);
    assert.ok(l1);
    assert.equal(l1.holder, 'a');
    assert.equal(await store.acquireLease('repo', 'b', 60_000), null);
    assert.equal(await store.checkLease('repo', l1.token), true);
    assert.equal(await store.renewLease('repo', 'a', l1.token, 60_000), true);
    assert.equal(await store.renewLease('repo', 'b', l1.token, 60_000), false);
    const same = await store.acquireLease('repo', 'a', 60_000);
    assert.equal(same!.token, l1.token, 're-acquiring our own lease keeps the token');
    await store.releaseLease('repo', 'a', l1.token);
    assert.equal(await store.checkLease('repo', l1.token), false);
    assert.equal(await store.renewLease('repo', 'a', l1.token, 60_000), false);
    const l2 = await store.acquireLease('repo', 'b', 1);
    assert.ok(l2 && l2.token > l1.token);
    // Expired: taken over by c with a higher token; b's token is fenced off.
    await new Promise((r) => setTimeout(r, 5)); // the lease's own 1 ms TTL must pass
    assert.equal(await store.checkLease('repo', l2.token), false);
    const l3 = await store.acquireLease('repo', 'c', 60_000);
    assert.ok(l3 && l3.token > l2.token);
    assert.equal(await store.renewLease('repo', 'b', l2.token, 60_000), false);
    assert.equal(await store.checkLease('repo', l3.token), true);
    const other = await store.acquireLease('other', 'a', 60_000);
    assert.ok(other);
  });

  test(`${name}: membership leases live exactly as long as their holder's membership, renewed by one heartbeat`, async (t) => {
    const { store } = await factory(t);
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // No membership yet: no membership lease, whatever epoch is claimed.
    assert.equal(await store.acquireMemberLease('t1', 'a', 1), null);
    const ha = await store.heartbeat({ member: 'a', ttlMs: 60_000 });
    assert.deepEqual(ha.members, ['a']);
    assert.ok(ha.epoch > 0);
    // The epoch stays while the membership does.
    assert.equal((await store.heartbeat({ member: 'a', ttlMs: 60_000 })).epoch, ha.epoch);
    assert.equal(await store.acquireMemberLease('t1', 'a', ha.epoch + 1), null, 'an epoch that is not the live one');
    const a1 = (await store.acquireMemberLease('t1', 'a', ha.epoch))!;
    assert.deepEqual({ holder: a1.holder, expiresAt: a1.expiresAt }, { holder: 'a', expiresAt: 0 });
    assert.equal((await store.acquireMemberLease('t1', 'a', ha.epoch))!.token, a1.token, 're-acquiring our own lease keeps the token');
    assert.equal(await store.checkLease('t1', a1.token), true);
    assert.equal(await store.renewLease('t1', 'a', a1.token, 1), true, 'a membership lease is "renewed" while its membership lives');
    // b is live too, but t1 is a's while a's membership lives: no TTL of its own to run out.
    const hb = await store.heartbeat({ member: 'b', ttlMs: 60_000 });
    assert.deepEqual(hb.members, ['a', 'b']);
    assert.notEqual(hb.epoch, ha.epoch);
    assert.equal(await store.acquireMemberLease('t1', 'b', hb.epoch), null);
    assert.equal(await store.acquireLease('t1', 'b', 60_000), null, 'nor as a TTL lease');
    // Released: b takes it with a higher token; a's token is fenced off.
    await store.releaseLease('t1', 'a', a1.token);
    assert.equal(await store.checkLease('t1', a1.token), false);
    const b1 = (await store.acquireMemberLease('t1', 'b', hb.epoch))!;
    assert.ok(b1.token > a1.token);
    // b's membership expires (a 1 ms heartbeat): its lease goes with it, at once, for everyone. (It
    // takes no share in that heartbeat, so it cuts no other membership back to 1 ms: next test.)
    await store.heartbeat({ member: 'b', ttlMs: 1, share: false });
    await wait(5);
    assert.equal(await store.checkLease('t1', b1.token), false);
    assert.equal(await store.renewLease('t1', 'b', b1.token, 60_000), false);
    const a2 = (await store.acquireMemberLease('t1', 'a', ha.epoch))!;
    assert.ok(a2.token > b1.token, 'taken over once the holder\'s membership expired');
    // b comes back: a new epoch, so its old token stays dead and its old epoch takes nothing.
    const hb2 = await store.heartbeat({ member: 'b', ttlMs: 60_000 });
    assert.ok(hb2.epoch > hb.epoch, `a new epoch after expiry: ${hb.epoch} → ${hb2.epoch}`);
    assert.equal(await store.checkLease('t1', b1.token), false);
    assert.equal(await store.acquireMemberLease('t2', 'b', hb.epoch), null);
    assert.ok(await store.acquireMemberLease('t2', 'b', hb2.epoch));
    // A member that takes no share is live (its leases hold) but not among the members.
    const hc = await store.heartbeat({ member: 'c', ttlMs: 60_000, share: false });
    assert.deepEqual(hc.members, ['a', 'b']);
    const c3 = (await store.acquireMemberLease('t3', 'c', hc.epoch))!;
    assert.equal(await store.checkLease('t3', c3.token), true);
    // Leave removes at once, and the leaver's leases with it.
    const left = await store.heartbeat({ member: 'c', ttlMs: 60_000, leave: true });
    assert.deepEqual(left, { members: ['a', 'b'], epoch: 0 });
    assert.equal(await store.checkLease('t3', c3.token), false);
    assert.deepEqual((await store.heartbeat({ member: 'b', ttlMs: 60_000, leave: true })).members, ['a']);
    assert.deepEqual((await store.heartbeat({ member: 'a', ttlMs: 60_000 })).members, ['a']);
    // TTL leases and membership leases keep one token sequence per name.
    await store.releaseLease('t1', 'a', a2.token);
    const ttl = (await store.acquireLease('t1', 'x', 60_000))!;
    assert.ok(ttl.token > a2.token);
    assert.equal(await store.acquireMemberLease('t1', 'a', ha.epoch), null, 'an unexpired TTL lease is held');
  });

  test(`${name}: a member that takes a share cuts longer memberships back to its TTL; changes of the member set are told to the others`, async (t) => {
    const { store } = await factory(t);
    const told: string[] = [];
    const unsubscribe = store.onMembersChanged((by) => told.push(by));
    t.after(unsubscribe);
    // a alone, for a long (solo) TTL, holding a lease.
    const ha = await store.heartbeat({ member: 'a', ttlMs: 60_000 });
    const a1 = (await store.acquireMemberLease('t1', 'a', ha.epoch))!;
    await until(() => told.includes('a'), 'a\'s join to be told', 5_000, 5);
    // An observer (no share) with a short TTL cuts nothing.
    await store.heartbeat({ member: 'o', ttlMs: 200, share: false });
    // b joins with a 300 ms TTL: a's membership now ends with b's, unless a renews.
    const hb = await store.heartbeat({ member: 'b', ttlMs: 300 });
    assert.deepEqual(hb.members, ['a', 'b']);
    await until(() => told.includes('b'), 'b\'s join to be told', 5_000, 5);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(await store.checkLease('t1', a1.token), false, "a's membership was cut to b's TTL and ran out, its lease with it");
    const again = await store.heartbeat({ member: 'a', ttlMs: 60_000 });
    assert.notEqual(again.epoch, ha.epoch, 'a comes back with a new epoch');
    await until(() => told.filter((m) => m === 'a').length === 2, "a's return to be told", 5_000, 5);
    // Renewals that change nothing are not told: a renews (same epoch, cuts nobody: b is gone).
    const n = told.length;
    assert.equal((await store.heartbeat({ member: 'a', ttlMs: 60_000 })).epoch, again.epoch);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(told.slice(n), [], 'a renewal that changed no member is not told');
  });

  test(`${name}: concurrent compare-and-swap: one winner per round`, async (t) => {
    const { store } = await factory(t);
    let cur = await store.create(CM, key('hot'), cm('hot', 'default', { n: '0' }));
    const winners: number[] = [];
    for (let round = 0; round < 10; round++) {
      const base = rvOf(cur);
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) =>
          store.update(CM, key('hot'), cm('hot', 'default', { n: String(round + 1), by: String(i) }), base),
        ),
      );
      const won = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<KubeObject>[];
      const lost = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      assert.equal(won.length, 1, `round ${round}`);
      for (const l of lost) assert.equal((l.reason as StorageError).code, 'Conflict');
      cur = won[0]!.value;
      winners.push(Number(cur.data && (cur.data as Record<string, string>).by));
    }
    const final = await store.get(CM, key('hot'));
    assert.deepEqual(final, cur);
    assert.equal((final!.data as Record<string, string>).n, '10');
  });

  test(`${name}: every acknowledged write survives a restart`, async (t) => {
    const fx = await factory(t);
    const store = fx.store;
    const a = await store.create(CM, key('a'), cm('a', 'default', { v: '1' }));
    const writes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.create(GT, key(`g${i}`, 'ns', `c${i % 4}`), cm(`g${i}`, 'ns'))),
    );
    const a2 = await store.update(CM, key('a'), cm('a', 'default', { v: '2' }), rvOf(a));
    await store.delete(GT, key('g7', 'ns', 'c3'));
    const lease = await store.acquireLease('l', 'me', 60_000);
    const before = await store.currentRV();
    const gts = (await store.list(GT)).items;

    const reopened = await fx.reopen();
    assert.equal(await reopened.currentRV(), before);
    assert.deepEqual(await reopened.get(CM, key('a')), a2);
    assert.deepEqual((await reopened.list(GT)).items, gts);
    assert.equal(gts.length, writes.length - 1);
    assert.equal(await reopened.checkLease('l', lease!.token), true);
    // The counter continues; history after the restart point is replayable.
    const b = await reopened.create(CM, key('b'), cm('b'));
    assert.equal(rvOf(b), before + 1);
    const c = new Collector();
    const h = await reopened.watch(CM, { fromRV: before }, c.cb);
    t.after(() => h.stop());
    await c.next(1);
    assert.deepEqual(c.rvs(), [rvOf(b)]);
  });
}
