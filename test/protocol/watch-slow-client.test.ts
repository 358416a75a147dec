// A watch client that stops reading cannot make the server buffer without bound: the server ends
// that watch (the client would re-list) and keeps serving everyone else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, ns, pool, startServer, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  server = await startServer(['--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0']); // 260 GitTargets in one namespace: beyond the default quota
});
after(() => server?.stop());

test('a watcher that never reads is ended once its backlog passes the limit; the server stays up', async () => {
  const res = await server.stream(`${ns('slow')}?watch=true`);
  assert.equal(res.statusCode, 200);
  res.pause(); // never read: TCP and then the server's buffers fill up
  let ended = false;
  res.on('close', () => (ended = true));
  res.on('end', () => (ended = true));

  // ~200 KB per event: 260 events (~52 MB) exceed the 32 MB limit plus what the kernel buffers.
  const big = 'x'.repeat(200 * 1024);
  await pool(
    Array.from({ length: 260 }, (_, i) => i),
    8,
    async (i) => {
      const body = gitTarget(`big-${i}`, 'slow');
      body.metadata.annotations = { 'example.com/blob': big };
      const r = await server.request('POST', ns('slow'), { body });
      assert.equal(r.status, 201, r.text);
    },
  );
  const deadline = Date.now() + 15_000;
  while (!server.stderr().includes('ending a watch whose client does not read')) {
    assert.ok(Date.now() < deadline, `the server did not end the stalled watch; stderr: ${server.stderr().slice(-500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(server.alive());
  assert.equal((await server.get('/healthz')).text, 'ok');
  // Draining now reaches the end of the stream: the server closed it.
  res.resume();
  const until = Date.now() + 15_000;
  while (!ended) {
    assert.ok(Date.now() < until, 'the stalled watch stream was not closed');
    await new Promise((r) => setTimeout(r, 50));
  }
  // Everyone else is still served.
  const list = await server.get(`${ns('slow')}?limit=1`);
  assert.equal(list.status, 200);
  assert.equal(list.body.metadata.remainingItemCount, 259);
});

test('a large initial state (over the backlog limit) reaches a client that reads, at its pace', async () => {
  const big = 'y'.repeat(200 * 1024);
  await pool(
    Array.from({ length: 200 }, (_, i) => i),
    8,
    async (i) => {
      const body = gitTarget(`init-${i}`, 'initial');
      body.metadata.annotations = { 'example.com/blob': big };
      const r = await server.request('POST', ns('initial'), { body });
      assert.equal(r.status, 201, r.text);
    },
  );
  const res = await server.stream(`${ns('initial')}?watch=true&resourceVersion=0`);
  let buf = '';
  let added = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${added} of 200 ADDED events arrived`)), 30_000);
    res.on('data', (c: Buffer) => {
      buf += c.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const ev = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (ev.type === 'ADDED') added++;
        if (added === 200) {
          clearTimeout(timer);
          res.destroy();
          resolve();
        }
      }
      // Read slowly: the server must wait for the client, not drop it.
      res.pause();
      setTimeout(() => res.resume(), 1);
    });
    res.on('end', () => reject(new Error(`stream ended after ${added} ADDED events`)));
  });
  assert.equal(added, 200);
});
