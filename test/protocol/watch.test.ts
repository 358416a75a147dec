// The watch protocol over HTTPS and resumption: a watch resumed
// from the last resourceVersion seen before a disconnect delivers exactly the later events, none
// twice. One HTTP/2 check that a watch's headers arrive before any event.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, constants as h2 } from 'node:http2';
import { EventReader, GV, TABLE_ACCEPT, gitTarget, ns, startServer, watch, type StartedServer } from '../support/server.js';

const RETENTION = 60;
let server: StartedServer;
before(async () => {
  // Bookmarks every second here (the default is a minute, test/protocol/watch-bookmarks.test.ts), so 99 sees them within its waits.
  server = await startServer([`--event-log-retention=${RETENTION}`, '--watch-bookmark-interval=1s']);
});
after(() => server?.stop());

const merge = (path: string, body: unknown) => server.request('PATCH', path, { contentType: 'application/merge-patch+json', body });
async function create(namespace: string, name: string, labels?: Record<string, string>): Promise<any> {
  const r = await server.request('POST', ns(namespace), { body: gitTarget(name, namespace, { labels }) });
  assert.equal(r.status, 201, r.text);
  return r.body;
}
async function listRV(path: string): Promise<string> {
  const r = await server.get(path);
  assert.equal(r.status, 200, r.text);
  return r.body.metadata.resourceVersion;
}
async function next(w: EventReader, what: string): Promise<any> {
  const ev = await w.next();
  assert.ok(ev, `the stream ended before ${what}`);
  return ev;
}
const summary = (ev: any) => `${ev.type} ${ev.object?.metadata?.name}`;

describe('watch protocol', () => {
  test('96: headers arrive at once on an empty namespace; JSON, chunked, no-cache', async () => {
    const res = await server.stream(`${ns('empty')}?watch=true`, { accept: 'application/json' });
    try {
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'application/json');
      assert.equal(res.headers['transfer-encoding'], 'chunked');
      assert.equal(res.headers['cache-control'], 'no-cache, private');
    } finally {
      res.destroy();
    }
  });

  test('97: from a list resourceVersion: ADDED, MODIFIED, DELETED in order, increasing resourceVersions', async () => {
    const rv = await listRV(ns('w97'));
    const w = await watch(server, `${ns('w97')}?watch=true&resourceVersion=${rv}`);
    try {
      const created = await create('w97', 'demo');
      const patched = await merge(`${ns('w97')}/demo`, { spec: { suspend: true } });
      assert.equal(patched.status, 200);
      const del = await server.request('DELETE', `${ns('w97')}/demo`, { body: { propagationPolicy: 'Background' } });
      assert.equal(del.status, 200, del.text);
      const evs = [await next(w, 'ADDED'), await next(w, 'MODIFIED'), await next(w, 'DELETED')];
      assert.deepEqual(evs.map(summary), ['ADDED demo', 'MODIFIED demo', 'DELETED demo']);
      for (const ev of evs) assert.deepEqual(Object.keys(ev).sort(), ['object', 'type']);
      assert.equal(evs[0].object.metadata.resourceVersion, created.metadata.resourceVersion);
      assert.equal(evs[1].object.metadata.resourceVersion, patched.body.metadata.resourceVersion);
      assert.equal(evs[1].object.spec.suspend, true);
      const rvs = evs.map((e) => Number(e.object.metadata.resourceVersion));
      assert.ok(rvs[0]! > Number(rv) && rvs[0]! < rvs[1]! && rvs[1]! < rvs[2]!, `resourceVersions ${rvs}`);
      assert.equal(evs[0].object.kind, 'GitTarget');
      assert.equal(evs[0].object.apiVersion, 'configbutler.ai/v1alpha1');
    } finally {
      w.close();
    }
  });

  test('98: without resourceVersion (and with 0): ADDED for every existing object, then live events', async () => {
    for (const [n, q] of [['w98-unset', 'watch=true'], ['w98-zero', 'watch=1&resourceVersion=0']] as const) {
      await create(n, 'a');
      await create(n, 'b');
      const w = await watch(server, `${ns(n)}?${q}`);
      try {
        const initial = [await next(w, 'ADDED a'), await next(w, 'ADDED b')];
        assert.deepEqual(initial.map(summary).sort(), ['ADDED a', 'ADDED b']);
        await create(n, 'c');
        assert.equal(summary(await next(w, 'the live ADDED')), 'ADDED c');
      } finally {
        w.close();
      }
    }
  });

  test('99: allowWatchBookmarks: a BOOKMARK carries only kind, apiVersion and metadata.resourceVersion', async () => {
    const rv = await listRV(ns('w99'));
    const w = await watch(server, `${ns('w99')}?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`);
    try {
      // A write elsewhere moves the store's resourceVersion; this watcher sees no event, so it gets a bookmark.
      const other = await create('w99-other', 'x');
      const ev = await next(w, 'a BOOKMARK');
      assert.equal(ev.type, 'BOOKMARK');
      assert.deepEqual(ev.object, { kind: 'GitTarget', apiVersion: 'configbutler.ai/v1alpha1', metadata: { resourceVersion: ev.object.metadata.resourceVersion } });
      assert.ok(Number(ev.object.metadata.resourceVersion) >= Number(other.metadata.resourceVersion));
    } finally {
      w.close();
    }
  });

  test('99: a watch whose selector drops every event still gets BOOKMARKs at the interval, carrying the current resourceVersion', async () => {
    const rv = await listRV(ns('w99b'));
    const w = await watch(server, `${ns('w99b')}?watch=true&allowWatchBookmarks=true&labelSelector=app%3Dnone&resourceVersion=${rv}`);
    let stop = false;
    let lastWrite = '0';
    // Objects of the same resource and namespace change faster than the bookmark interval (1 s);
    // none matches the selector.
    const writer = (async () => {
      await create('w99b', 'busy', { app: 'busy' });
      for (let i = 0; !stop; i++) {
        const r = await merge(`${ns('w99b')}/busy`, { metadata: { labels: { i: String(i) } } });
        assert.equal(r.status, 200, r.text);
        lastWrite = r.body.metadata.resourceVersion;
        await new Promise((res) => setTimeout(res, 150));
      }
    })();
    try {
      const writtenBefore = Number(lastWrite);
      const ev = await w.next(10_000);
      assert.equal(ev.type, 'BOOKMARK', JSON.stringify(ev));
      assert.ok(Number(ev.object.metadata.resourceVersion) > Number(rv), `bookmark ${ev.object.metadata.resourceVersion} is not past the start ${rv}`);
      assert.ok(Number(ev.object.metadata.resourceVersion) >= writtenBefore, `bookmark ${ev.object.metadata.resourceVersion} is behind a write acknowledged before it (${writtenBefore})`);
      // And again at the next interval, further on.
      const again = await w.next(10_000);
      assert.equal(again.type, 'BOOKMARK');
      assert.ok(Number(again.object.metadata.resourceVersion) > Number(ev.object.metadata.resourceVersion));
    } finally {
      stop = true;
      await writer;
      w.close();
    }
  });

  test('100: timeoutSeconds ends the stream cleanly, without an ERROR event', async () => {
    const w = await watch(server, `${ns('w100')}?watch=true&timeoutSeconds=1`);
    await w.end();
    assert.equal(w.pending(), 0);
  });

  test('101: a resourceVersion older than the retained history → ERROR 410 Expired, then the end', async () => {
    const first = await create('w101', 'old');
    const oldRV = first.metadata.resourceVersion;
    for (let i = 0; i < RETENTION + 5; i++) {
      const r = await merge(`${ns('w101')}/old`, { metadata: { labels: { i: String(i) } } });
      assert.equal(r.status, 200, r.text);
    }
    const res = await server.stream(`${ns('w101')}?watch=true&resourceVersion=${oldRV}`, { accept: 'application/json' });
    assert.equal(res.statusCode, 200);
    const w = new EventReader(res);
    const ev = await next(w, 'the ERROR event');
    assert.equal(ev.type, 'ERROR');
    assert.equal(ev.object.kind, 'Status');
    assert.equal(ev.object.apiVersion, 'v1');
    assert.equal(ev.object.status, 'Failure');
    assert.equal(ev.object.code, 410);
    assert.equal(ev.object.reason, 'Expired');
    assert.match(ev.object.message, new RegExp(`^too old resource version: ${oldRV} \\(\\d+\\)$`));
    await w.end();
    assert.equal(w.pending(), 0);
  });

  test('102: fieldSelector narrows to one name; a label selector turns relabelling into DELETED/ADDED', async () => {
    const rv = await listRV(ns('w102'));
    const byName = await watch(server, `${ns('w102')}?watch=true&resourceVersion=${rv}&fieldSelector=metadata.name%3Ddemo`);
    const byLabel = await watch(server, `${ns('w102')}?watch=true&resourceVersion=${rv}&labelSelector=app%3Ddemo`);
    try {
      await create('w102', 'other', { app: 'demo' });
      await create('w102', 'demo', { app: 'demo' });
      assert.equal((await merge(`${ns('w102')}/demo`, { metadata: { labels: { app: 'other' } } })).status, 200);
      assert.equal((await merge(`${ns('w102')}/demo`, { metadata: { labels: { app: 'demo' } } })).status, 200);
      await create('w102', 'sentinel', { app: 'demo' });
      assert.equal(summary(await next(byLabel, '1')), 'ADDED other');
      assert.equal(summary(await next(byLabel, '2')), 'ADDED demo');
      assert.equal(summary(await next(byLabel, '3')), 'DELETED demo');
      assert.equal(summary(await next(byLabel, '4')), 'ADDED demo');
      assert.equal(summary(await next(byLabel, '5')), 'ADDED sentinel');
      assert.equal(summary(await next(byName, '1')), 'ADDED demo');
      assert.equal(summary(await next(byName, '2')), 'MODIFIED demo');
      assert.equal(summary(await next(byName, '3')), 'MODIFIED demo');
      // Nothing about "other" or "sentinel" reached the name-filtered watch.
      const later = await create('w102', 'z');
      const d = await merge(`${ns('w102')}/demo`, { metadata: { labels: { last: 'x' } } });
      assert.equal(d.status, 200);
      const ev = await next(byName, '4');
      assert.equal(summary(ev), 'MODIFIED demo');
      assert.ok(Number(ev.object.metadata.resourceVersion) > Number(later.metadata.resourceVersion));
    } finally {
      byName.close();
      byLabel.close();
    }
  });

  test('103: Table watch: one row per event; columnDefinitions in the first event only', async () => {
    await create('w103', 'a');
    const w = await watch(server, `${ns('w103')}?watch=true`, TABLE_ACCEPT);
    try {
      const first = await next(w, 'ADDED a');
      assert.equal(first.type, 'ADDED');
      assert.equal(first.object.kind, 'Table');
      assert.equal(first.object.apiVersion, 'meta.k8s.io/v1');
      assert.ok(Array.isArray(first.object.columnDefinitions) && first.object.columnDefinitions.length > 0);
      assert.equal(first.object.rows.length, 1);
      assert.equal(first.object.rows[0].cells[0], 'a');
      assert.equal(first.object.rows[0].cells.length, first.object.columnDefinitions.length);
      assert.equal(first.object.rows[0].object.kind, 'PartialObjectMetadata');
      await create('w103', 'b');
      const second = await next(w, 'ADDED b');
      assert.equal(second.object.kind, 'Table');
      assert.equal(second.object.columnDefinitions, null);
      assert.equal(second.object.rows.length, 1);
      assert.equal(second.object.rows[0].cells[0], 'b');
    } finally {
      w.close();
    }
  });

  test('104: PartialObjectMetadata watch: event objects are PartialObjectMetadata', async () => {
    await create('w104', 'a', { k: 'v' });
    const w = await watch(server, `${ns('w104')}?watch=true`, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
    try {
      const ev = await next(w, 'ADDED a');
      assert.equal(ev.object.kind, 'PartialObjectMetadata');
      assert.equal(ev.object.apiVersion, 'meta.k8s.io/v1');
      assert.equal(ev.object.metadata.name, 'a');
      assert.deepEqual(ev.object.metadata.labels, { k: 'v' });
      assert.equal(ev.object.spec, undefined);
    } finally {
      w.close();
    }
  });

  test('105: WatchList: ADDEDs, then a BOOKMARK annotated k8s.io/initial-events-end, then changes', async () => {
    await create('w105', 'a');
    await create('w105', 'b');
    const w = await watch(server, `${ns('w105')}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    try {
      const initial = [await next(w, 'ADDED'), await next(w, 'ADDED')];
      assert.deepEqual(initial.map(summary).sort(), ['ADDED a', 'ADDED b']);
      const bm = await next(w, 'the initial-events-end BOOKMARK');
      assert.equal(bm.type, 'BOOKMARK');
      assert.deepEqual(bm.object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });
      assert.equal(bm.object.kind, 'GitTarget');
      assert.ok(Number(bm.object.metadata.resourceVersion) >= Math.max(...initial.map((e) => Number(e.object.metadata.resourceVersion))));
      await create('w105', 'c');
      let ev = await next(w, 'ADDED c');
      while (ev.type === 'BOOKMARK') ev = await next(w, 'ADDED c');
      assert.equal(summary(ev), 'ADDED c');
    } finally {
      w.close();
    }
  });

  test('105: WatchList without allowWatchBookmarks or with resourceVersionMatch=Exact → 422 ListOptions Invalid', async () => {
    const a = await server.get(`${ns('w105')}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`);
    assert.equal(a.status, 422, a.text);
    assert.equal(a.body.reason, 'Invalid');
    assert.equal(a.body.message, 'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: Forbidden: allowWatchBookmarks must be true when sendInitialEvents is true');
    const b = await server.get(`${ns('w105')}?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1&allowWatchBookmarks=true`);
    assert.equal(b.status, 422, b.text);
    assert.equal(b.body.message, `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to 'NotOlderThan'`);
  });

  test('all-namespaces watch sees every namespace; a namespaced watch only its own', async () => {
    const rv = await listRV(`${GV}/gittargets`);
    const all = await watch(server, `${GV}/gittargets?watch=true&resourceVersion=${rv}`);
    const one = await watch(server, `${ns('wall-b')}?watch=true&resourceVersion=${rv}`);
    try {
      await create('wall-a', 'x');
      await create('wall-b', 'y');
      const a1 = await next(all, 'x');
      const a2 = await next(all, 'y');
      assert.deepEqual([a1, a2].map((e) => `${e.object.metadata.namespace}/${e.object.metadata.name}`), ['wall-a/x', 'wall-b/y']);
      assert.equal(summary(await next(one, 'y')), 'ADDED y');
    } finally {
      all.close();
      one.close();
    }
  });
});

describe('watch resumption after a disconnect', () => {
  test('resuming from the last resourceVersion seen delivers exactly the later events, none twice', async () => {
    const N = 'resume';
    const rv0 = await listRV(ns(N));
    const expected: string[] = [];
    const write = async (kind: 'create' | 'patch' | 'delete', name: string, i: number) => {
      if (kind === 'create') {
        const o = await create(N, name);
        expected.push(`ADDED ${name} ${o.metadata.resourceVersion}`);
      } else if (kind === 'patch') {
        const r = await merge(`${ns(N)}/${name}`, { metadata: { labels: { i: String(i) } } });
        assert.equal(r.status, 200, r.text);
        expected.push(`MODIFIED ${name} ${r.body.metadata.resourceVersion}`);
      } else {
        const r = await server.request('DELETE', `${ns(N)}/${name}`);
        assert.equal(r.status, 200, r.text);
        expected.push(`DELETED ${name} *`);
      }
    };
    const first = await watch(server, `${ns(N)}?watch=true&resourceVersion=${rv0}`);
    const seen: any[] = [];
    try {
      let i = 0;
      for (const n of ['r1', 'r2', 'r3', 'r4', 'r5']) await write('create', n, i++);
      for (const n of ['r1', 'r2', 'r3']) await write('patch', n, i++);
      await write('delete', 'r4', i++);
      // Read the first 6 of the 9 events, then drop the connection.
      for (let k = 0; k < 6; k++) seen.push(await next(first, `event ${k}`));
    } finally {
      first.close();
    }
    const lastRV = seen[seen.length - 1].object.metadata.resourceVersion;
    // Changes while disconnected.
    let i = 100;
    await write('create', 'r6', i++);
    await write('patch', 'r2', i++);
    await write('delete', 'r1', i++);
    await write('patch', 'r6', i++);
    const resumed = await watch(server, `${ns(N)}?watch=true&resourceVersion=${lastRV}`);
    try {
      const remaining = expected.length - seen.length;
      for (let k = 0; k < remaining; k++) seen.push(await next(resumed, `resumed event ${k}`));
      // Nothing else is queued: the next event is the sentinel written now.
      await write('create', 'sentinel', i++);
      const s = await next(resumed, 'the sentinel');
      assert.equal(summary(s), 'ADDED sentinel');
    } finally {
      resumed.close();
    }
    expected.pop(); // the sentinel
    const got = seen.map((e) => `${e.type} ${e.object.metadata.name} ${e.type === 'DELETED' ? '*' : e.object.metadata.resourceVersion}`);
    assert.deepEqual(got, expected);
    const rvs = seen.map((e) => Number(e.object.metadata.resourceVersion));
    for (let k = 1; k < rvs.length; k++) assert.ok(rvs[k]! > rvs[k - 1]!, `resourceVersions not increasing: ${rvs}`);
    assert.equal(new Set(rvs).size, rvs.length);
  });
});

describe('HTTP/2', () => {
  test("a watch's response headers arrive before any event", async () => {
    const session = connect(server.url, { ca: server.ca, cert: server.cert, key: server.key });
    try {
      const rv = await listRV(ns('h2'));
      const stream = session.request({
        [h2.HTTP2_HEADER_PATH]: `${ns('h2')}?watch=true&resourceVersion=${rv}`,
        [h2.HTTP2_HEADER_METHOD]: 'GET',
        accept: 'application/json',
      });
      stream.setEncoding('utf8');
      let data = '';
      stream.on('data', (c: string) => (data += c));
      const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
        stream.once('response', resolve);
        stream.once('error', reject);
      });
      assert.equal(headers[':status'], 200);
      assert.equal(headers['content-type'], 'application/json');
      assert.equal(data, '', 'no event can exist yet');
      assert.equal(session.alpnProtocol, 'h2');
      // Then an event flows on the same stream.
      await create('h2', 'x');
      await new Promise<void>((resolve) => {
        const check = () => (data.includes('\n') ? resolve() : stream.once('data', check));
        check();
      });
      const ev = JSON.parse(data.split('\n')[0]!);
      assert.equal(summary(ev), 'ADDED x');
      stream.close();
    } finally {
      session.destroy();
    }
  });
});
