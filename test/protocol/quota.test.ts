// Quotas on GitTargets and their source streams (src/registry/quota.ts), against the real server:
// a create or update beyond a limit answers 403 Forbidden worded as kube-apiserver's ResourceQuota
// admission words it, changes nothing, and concurrent creates never pass a limit on one replica.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStatus, gitTarget, startServer } from '../support/server.js';
import { startRedis } from '../support/redis.js';

const base = (ns: string) => `/apis/configbutler.ai/v1alpha1/namespaces/${ns}/gittargets`;
const GR = 'gittargets.configbutler.ai';
const COUNT = 'count/gittargets.configbutler.ai';

/** A GitTarget mirroring configmaps of `n` namespaces: n source streams. */
function withStreams(name: string, ns: string, n: number) {
  return gitTarget(name, ns, { spec: { resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: Array.from({ length: n }, (_, i) => `src-${i}`) }] } });
}

test('GitTarget quotas: per namespace, per logical cluster, streams per GitTarget and per namespace; 403 exceeded quota as ResourceQuota answers, nothing stored', { timeout: 120_000 }, async (t) => {
  const srv = await startServer(['--max-gittargets-per-namespace=3', '--max-gittargets-per-cluster=6', '--max-streams-per-gittarget=4', '--max-streams-per-namespace=6']);
  t.after(() => srv.stop());
  const create = (ns: string, body: unknown, query = '') => srv.request('POST', base(ns) + query, { body });
  const names = async (ns: string) => ((await srv.get(base(ns))).body.items as Array<{ metadata: { name: string } }>).map((o) => o.metadata.name).sort();

  for (let i = 0; i < 3; i++) assert.equal((await create('race', gitTarget(`r-${i}`, 'race'))).status, 201);
  const fourth = await create('race', gitTarget('r-3', 'race'));
  assertStatus(fourth, 403, 'Forbidden', `${GR} "r-3" is forbidden: exceeded quota: max-gittargets-per-namespace, requested: ${COUNT}=1, used: ${COUNT}=3, limited: ${COUNT}=3`);
  assert.deepEqual(fourth.body.details, { name: 'r-3', group: 'configbutler.ai', kind: 'gittargets' });
  assert.equal((await srv.get(`${base('race')}/r-3`)).status, 404);
  // Deleting one frees its place.
  const kept = await names('race');
  assert.equal((await srv.request('DELETE', `${base('race')}/${kept[0]}`)).status, 200);
  assert.equal((await create('race', gitTarget('r-again', 'race'))).status, 201);
  // Without a name yet (generateName), as kube words it; dryRun is refused the same way.
  const generated = await create('race', { ...gitTarget('', 'race'), metadata: { generateName: 'r-', namespace: 'race' } });
  assertStatus(generated, 403, 'Forbidden', `${GR} is forbidden: exceeded quota: max-gittargets-per-namespace, requested: ${COUNT}=1, used: ${COUNT}=3, limited: ${COUNT}=3`);
  assert.deepEqual(generated.body.details, { group: 'configbutler.ai', kind: 'gittargets' });
  assertStatus(await create('race', gitTarget('r-dry', 'race'), '?dryRun=All'), 403, 'Forbidden', /exceeded quota: max-gittargets-per-namespace/);

  // Streams: one GitTarget may open four, the namespace six.
  assert.equal((await create('streams', withStreams('s1', 'streams', 4))).status, 201);
  assertStatus(await create('streams', withStreams('s2', 'streams', 5)), 403, 'Forbidden', `${GR} "s2" is forbidden: exceeded quota: max-streams-per-gittarget, requested: streams=5, used: streams=0, limited: streams=4`);
  assertStatus(await create('streams', withStreams('s2', 'streams', 3)), 403, 'Forbidden', `${GR} "s2" is forbidden: exceeded quota: max-streams-per-namespace, requested: streams=3, used: streams=4, limited: streams=6`);
  assert.equal((await create('streams', withStreams('s2', 'streams', 2))).status, 201);
  // An update that adds a stream is checked too, and changes nothing when refused.
  const grow = await srv.request('PATCH', `${base('streams')}/s2`, {
    body: { spec: { resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['src-0', 'src-1', 'src-2'] }] } },
    contentType: 'application/merge-patch+json',
  });
  assertStatus(grow, 403, 'Forbidden', `${GR} "s2" is forbidden: exceeded quota: max-streams-per-namespace, requested: streams=1, used: streams=6, limited: streams=6`);
  const s2 = (await srv.get(`${base('streams')}/s2`)).body;
  assert.deepEqual(s2.spec.resources[0].namespaces, ['src-0', 'src-1']);
  // Fewer streams are always allowed.
  const shrink = await srv.request('PATCH', `${base('streams')}/s2`, {
    body: { spec: { resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['src-0'] }] } },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(shrink.status, 200, shrink.text);

  // The logical cluster holds six: race 3 + streams 2 + one more.
  assert.equal((await create('other', gitTarget('o1', 'other'))).status, 201);
  assertStatus(await create('other', gitTarget('o2', 'other')), 403, 'Forbidden', `${GR} "o2" is forbidden: exceeded quota: max-gittargets-per-cluster, requested: ${COUNT}=1, used: ${COUNT}=6, limited: ${COUNT}=6`);
  assert.deepEqual(await names('other'), ['o1']);
});

test('--max-gittargets-per-namespace=0 is unlimited; a negative value is refused at start', { timeout: 60_000 }, async (t) => {
  const srv = await startServer(['--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0']);
  t.after(() => srv.stop());
  for (let i = 0; i < 5; i++) assert.equal((await srv.request('POST', base('default'), { body: gitTarget(`u-${i}`) })).status, 201);
  await assert.rejects(startServer(['--max-streams-per-gittarget=-1']), /--max-streams-per-gittarget/);
});

test('on Redis (where counting awaits the network), ten concurrent creates into a namespace allowed three store exactly three', { timeout: 60_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const srv = await startServer(['--storage=redis', `--redis-url=${redis.url}`, '--max-gittargets-per-namespace=3']);
  t.after(() => srv.stop());
  const create = (ns: string, body: unknown) => srv.request('POST', base(ns), { body });
  const names = async (ns: string) => ((await srv.get(base(ns))).body.items as Array<{ metadata: { name: string } }>).map((o) => o.metadata.name).sort();
  // Ten creates at once into a namespace allowed three: exactly three are stored.
  const raced = await Promise.all(Array.from({ length: 10 }, (_, i) => create('race', gitTarget(`r-${i}`, 'race'))));
  assert.deepEqual(raced.map((r) => r.status).sort(), [201, 201, 201, 403, 403, 403, 403, 403, 403, 403]);
  for (const r of raced.filter((x) => x.status === 403)) {
    const name = r.body.details.name;
    assertStatus(r, 403, 'Forbidden', `${GR} "${name}" is forbidden: exceeded quota: max-gittargets-per-namespace, requested: ${COUNT}=1, used: ${COUNT}=3, limited: ${COUNT}=3`);
    assert.deepEqual(r.body.details, { name, group: 'configbutler.ai', kind: 'gittargets' });
  }
  assert.equal((await names('race')).length, 3);
});

test('with only per-namespace quotas, creates are serialized per namespace: ten at once into each of two namespaces allowed three store exactly three each', { timeout: 60_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const srv = await startServer(['--storage=redis', `--redis-url=${redis.url}`, '--max-gittargets-per-namespace=3', '--max-gittargets-per-cluster=0']);
  t.after(() => srv.stop());
  const create = (ns: string, body: unknown) => srv.request('POST', base(ns), { body });
  const names = async (ns: string) => ((await srv.get(base(ns))).body.items as Array<{ metadata: { name: string } }>).map((o) => o.metadata.name).sort();
  const raced = await Promise.all(['a', 'b'].flatMap((ns) => Array.from({ length: 10 }, (_, i) => create(ns, gitTarget(`r-${i}`, ns)).then((r) => [ns, r.status] as const))));
  for (const ns of ['a', 'b']) {
    assert.deepEqual(raced.filter(([n]) => n === ns).map(([, s]) => s).sort(), [201, 201, 201, 403, 403, 403, 403, 403, 403, 403], ns);
    assert.equal((await names(ns)).length, 3, ns);
  }
});
