// BOOKMARKs at the default --watch-bookmark-interval (a minute, as kube-apiserver's watch cache):
// idle watches of quiet namespaces get none while other namespaces are written, and each gets one
// with the position it reached when it times out, so its client resumes from there. Every second,
// it was one bookmark per watch per second while anything was written: with a watch per tenant
// namespace, 10,000 a second at 10,000 tenants (bench/scale). Counted, not timed: the test holds on
// a loaded machine.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, gitTarget, ns, startServer, watch, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  server = await startServer([]);
});
after(() => server?.stop());

test('idle watches get no BOOKMARK every second while other namespaces are written; one at their timeout, past their start', { timeout: 60_000 }, async () => {
  const start = await server.get(ns('wb-0'));
  assert.equal(start.status, 200, start.text);
  const rv0 = Number(start.body.metadata.resourceVersion);
  const WATCHES = 10;
  const TIMEOUT_S = 5;
  const readers = await Promise.all(Array.from({ length: WATCHES }, (_, i) => watch(server, `${ns(`wb-${i}`)}?watch=true&allowWatchBookmarks=true&resourceVersion=${rv0}&timeoutSeconds=${TIMEOUT_S}`)));
  // Another namespace is written every 100 ms until every watch has ended.
  const created = await server.request('POST', ns('wb-busy'), { body: gitTarget('busy', 'wb-busy') });
  assert.equal(created.status, 201, created.text);
  let lastWrite = Number(created.body.metadata.resourceVersion);
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      const r = await server.request('PATCH', `${ns('wb-busy')}/busy`, { contentType: 'application/merge-patch+json', body: { metadata: { labels: { i: String(i) } } } });
      assert.equal(r.status, 200, r.text);
      lastWrite = Number(r.body.metadata.resourceVersion);
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  try {
    for (const [i, w] of readers.entries()) {
      const events: any[] = [];
      for (let ev = await w.next(30_000); ev; ev = await w.next(30_000)) events.push(ev);
      assert.equal(events.length, 1, `watch ${i}: ${JSON.stringify(events.map((e) => `${e.type} ${e.object?.metadata?.resourceVersion}`))}`);
      const [bm] = events;
      assert.deepEqual(bm, { type: 'BOOKMARK', object: { kind: 'GitTarget', apiVersion: GV.slice('/apis/'.length), metadata: { resourceVersion: bm.object.metadata.resourceVersion } } });
      const at = Number(bm.object.metadata.resourceVersion);
      assert.ok(at > rv0 + 1, `watch ${i}: its timeout bookmark ${at} is not past the writes after its start ${rv0}`);
      assert.ok(at <= lastWrite, `watch ${i}: bookmark ${at} is past the last write ${lastWrite}`);
    }
  } finally {
    stop = true;
    await writer;
    for (const w of readers) w.close();
  }
});
