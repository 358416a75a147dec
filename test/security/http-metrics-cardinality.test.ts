// #8 item 1: anonymous requests must not create metric series. Label values come from closed sets
// (served resources, known verbs), so 20,000 requests naming random resources leave the number of
// series unchanged and the server's memory flat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startServer, GV } from '../support/server.js';
import { h2request, h2session, repeat, seriesCount, settledRssBytes } from './http-support.js';

const REQUESTS = Number(process.env.ATTACK_REQUESTS ?? 20_000);

test('20,000 anonymous requests with random resource names add no series and under 100 MB RSS', { timeout: 240_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const admin = h2session(server);
  const anon = h2session(server, { anonymous: true });
  t.after(() => {
    admin.close();
    anon.close();
  });
  const randomPath = () => `${GV}/namespaces/x/${randomBytes(500).toString('hex')}`;
  const scrape = async () => {
    const r = await h2request(admin, 'GET', '/metrics');
    assert.equal(r.status, 200, r.text.slice(0, 200));
    return r.text;
  };

  // Warm up with as many requests as the attack: every label combination the attack can reach
  // exists afterwards, and the heap has grown to its working size (V8 collects lazily, so garbage
  // of the first thousands of requests still counts in RSS; RSS before a warm-up says little).
  await repeat(REQUESTS, 64, async () => assert.equal((await h2request(anon, 'GET', randomPath())).status, 401));
  await scrape(); // the scrape itself is a request with its own series
  const before = await scrape();
  const rssBefore = await settledRssBytes(server.pid);

  await repeat(REQUESTS, 64, async () => {
    const r = await h2request(anon, 'GET', randomPath(), { timeoutMs: 30_000 });
    assert.equal(r.status, 401);
  });

  const after = await scrape();
  const rssAfter = await settledRssBytes(server.pid);
  const heapT = (text: string) => /nodejs_heap_size_total_bytes (\d\S*)/.exec(text)?.[1];
  const ext = (text: string) => /nodejs_external_memory_bytes (\d\S*)/.exec(text)?.[1];
  t.diagnostic(`heap total ${heapT(before)} -> ${heapT(after)} ext ${ext(before)} -> ${ext(after)}`);
  t.diagnostic(`series ${seriesCount(before)} -> ${seriesCount(after)}, RSS ${(rssBefore / 2 ** 20).toFixed(1)} -> ${(rssAfter / 2 ** 20).toFixed(1)} MB`);
  const requestSeries = (text: string) => text.split('\n').filter((l) => l.startsWith('apiserver_request_'));
  assert.deepEqual(requestSeries(after).map((l) => l.replace(/ [\d.e+-]+$/, '')), requestSeries(before).map((l) => l.replace(/ [\d.e+-]+$/, '')));
  // The GC-duration histogram gains a series per kind of GC the first time one runs (a fixed set).
  const notGC = (text: string) => text.split('\n').filter((l) => !l.startsWith('nodejs_gc_duration_seconds')).join('\n');
  assert.equal(seriesCount(notGC(after)), seriesCount(notGC(before)));
  assert.match(after, /apiserver_request_total\{verb="list",resource="other",code="401"\} \d+/);
  // The leak this guards against grew RSS to 1.4 GB (series 3,474 -> 108,194). A bound of 100 MB
  // still catches any per-request retention (20,000 requests x 5 KB is 100 MB) while leaving room
  // for V8 collecting lazily on a loaded 2-core machine, where 30 MB failed without a leak
  // (46-47 MB at load average 15-18). The exact series count above is the precise check.
  assert.ok(rssAfter - rssBefore < 100 * 2 ** 20, `RSS grew by ${((rssAfter - rssBefore) / 2 ** 20).toFixed(1)} MB`);
});
