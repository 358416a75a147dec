// The source layer's sharing against a real server (our own configbutler.ai resources as the list+watch
// API): SourceClients of one kubeconfig ride one HTTP/2 session (src/controllers/source/transport.ts),
// other credentials get their own; subscribers of one (type, namespace) share one watch on the server
// (sources.ts, shared-watch.ts) and each sees what a watch with its own label selector would show,
// in order, including a late joiner; the last one to leave ends the watch.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, ns, gitTarget, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';
import { SourceClient } from '../../src/controllers/source/client.js';
import { SourceHub } from '../../src/controllers/source/sources.js';
import { TransportPool } from '../../src/controllers/source/transport.js';
import type { StreamHandlers } from '../../src/controllers/source/reflector.js';
import type { KubeObject } from '../../src/storage/types.js';
import { issueCertificate } from '../../src/certs/pki.js';

let server: StartedServer;
let kc: KubeConfig;
const gittargets = { group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets', kind: 'GitTarget', namespaced: true };

function sockets(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed while we looked
    }
  }
  return n;
}

/** Open watches of gittargets the server serves (apiserver_longrunning_requests). */
async function serverWatches(): Promise<number> {
  const r = await server.request('GET', '/metrics');
  const line = r.text.split('\n').find((l) => l.startsWith('apiserver_longrunning_requests{resource="gittargets"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function put(namespace: string, name: string, labels: Record<string, string>): Promise<void> {
  const path = `${ns(namespace)}/${name}`;
  const cur = await server.get(path);
  const r =
    cur.status === 404
      ? await server.request('POST', ns(namespace), { body: gitTarget(name, namespace, { labels }) })
      : await server.request('PATCH', path, { body: { metadata: { labels } }, contentType: 'application/merge-patch+json' });
  assert.ok(r.status === 200 || r.status === 201, r.text);
}

function recorder() {
  const log: string[] = [];
  const handlers: StreamHandlers = {
    replace: (items, _rv, initial) => {
      log.push(`${initial ? 'list' : 'relist'} ${items.map((i) => i.metadata.name).sort().join(',')}`);
      for (const i of items) if (i.metadata.managedFields) withManagedFields.push(i.metadata.name!);
    },
    event: (type, o: KubeObject) => {
      log.push(`${type} ${o.metadata.name} ${o.metadata.labels?.team ?? '-'}`);
      if (o.metadata.managedFields) withManagedFields.push(o.metadata.name!);
    },
  };
  // The shared watch caches and delivers objects without managedFields (the server sets them on every write).
  const withManagedFields: string[] = [];
  return { log, handlers, withManagedFields };
}

before(async () => {
  server = await startServer(['--controllers=none']);
  kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfig);
});
after(async () => server?.stop());

test('50 clients of one kubeconfig: one HTTP/2 session, 50 streams; other credentials never share it', { timeout: 60_000 }, async () => {
  const pool = new TransportPool();
  const before = sockets(server.pid);
  const clients = Array.from({ length: 50 }, () => new SourceClient(kc, { transports: pool }));
  const streams = clients.map((c, i) => {
    const ac = new AbortController();
    return { ac, open: c.open(`/apis/configbutler.ai/v1alpha1/namespaces/s-${i}/gittargets`, { watch: true }, ac.signal) };
  });
  try {
    for (const s of streams) assert.equal((await s.open).status, 200);
    assert.deepEqual(pool.stats(), { transports: 1, sessions: 1, streams: 50 });
    assert.ok(sockets(server.pid) <= before + 1, `${sockets(server.pid)} sockets on the server, ${before} before 50 watches`);

    // Another user (its own client certificate) against the same server: its own transport.
    const certs = join(server.dataDir, 'certs');
    const ca = { certPem: readFileSync(join(certs, 'ca.crt'), 'utf8'), keyPem: readFileSync(join(certs, 'ca.key'), 'utf8') };
    const other = issueCertificate(ca, { commonName: 'other', organizations: ['system:masters'], usage: 'client' });
    const kc2 = new KubeConfig();
    const b64 = (x: string) => Buffer.from(x).toString('base64');
    kc2.loadFromOptions({
      clusters: [kc.getCurrentCluster()!],
      users: [{ name: 'other', certData: b64(other.certPem), keyData: b64(other.keyPem) }],
      contexts: [{ name: 'x', cluster: kc.getCurrentCluster()!.name, user: 'other' }],
      currentContext: 'x',
    });
    const c2 = new SourceClient(kc2, { transports: pool });
    await c2.getJSON('/apis/configbutler.ai/v1alpha1/namespaces/s-0/gittargets');
    // The GET's stream closes just after its body ended.
    await until(async () => pool.stats().streams === 50, 'the GET stream to close');
    assert.deepEqual(pool.stats(), { transports: 2, sessions: 2, streams: 50 });
    c2.close();
    assert.deepEqual(pool.stats(), { transports: 1, sessions: 1, streams: 50 });
  } finally {
    for (const s of streams) s.ac.abort();
    for (const c of clients) c.close();
  }
  await until(async () => pool.stats().streams === 0, 'the aborted streams to close');
  assert.deepEqual(pool.stats(), { transports: 0, sessions: 0, streams: 0 });
});

test('one watch for every subscriber of a (type, namespace): label selectors on delivery, a late joiner gets the cache, the last to leave ends it', { timeout: 60_000 }, async () => {
  await put('shared', 'a1', { team: 'a' });
  await put('shared', 'b1', { team: 'b' });
  const hub = new SourceHub(new TransportPool());
  const source = hub.acquire(kc);
  const all = recorder();
  const teamA = recorder();
  const subAll = source.watch(gittargets, 'shared', undefined, all.handlers);
  const subA = source.watch(gittargets, 'shared', 'team=a', teamA.handlers);
  try {
    await until(async () => all.log.length === 1 && teamA.log.length === 1, 'both initial lists');
    assert.deepEqual(all.log, ['list a1,b1']);
    assert.deepEqual(teamA.log, ['list a1']);
    assert.equal(await serverWatches(), 1);
    assert.deepEqual(hub.stats(), { sources: 1, watches: 1, subscribers: 2 });

    await put('shared', 'a2', { team: 'a' }); // enters team a
    await put('shared', 'a1', { team: 'b' }); // leaves team a: DELETED for it, as a filtered watch says
    await put('shared', 'b1', { team: 'a' }); // enters team a
    await until(async () => all.log.length === 4 && teamA.log.length === 4, 'three changes delivered');
    assert.deepEqual(all.log.slice(1), ['ADDED a2 a', 'MODIFIED a1 b', 'MODIFIED b1 a']);
    // b1 enters team a's selection: ADDED for it, as kube-apiserver's filtered watch says.
    assert.deepEqual(teamA.log.slice(1), ['ADDED a2 a', 'DELETED a1 b', 'ADDED b1 a']);

    // A late joiner: the cache as its initial list, then the events after it.
    const late = recorder();
    const subLate = source.watch(gittargets, 'shared', 'team=b', late.handlers);
    await until(async () => late.log.length === 1, 'the late initial list');
    assert.deepEqual(late.log, ['list a1']);
    await put('shared', 'a1', { team: 'c' });
    await until(async () => late.log.length === 2 && all.log.length === 5, 'the next change');
    assert.deepEqual(late.log, ['list a1', 'DELETED a1 c']);
    assert.deepEqual([...all.withManagedFields, ...teamA.withManagedFields, ...late.withManagedFields], [], 'objects delivered with managedFields');
    assert.equal(await serverWatches(), 1, 'still one watch on the server');

    await subLate.stop();
    await subAll.stop();
    assert.equal(await serverWatches(), 1, 'a subscriber remains');
  } finally {
    await subA.stop();
    await subAll.stop();
    source.release();
  }
  assert.deepEqual(hub.stats(), { sources: 0, watches: 0, subscribers: 0 });
  await until(async () => (await serverWatches()) === 0, 'the watch to end on the server');
});
