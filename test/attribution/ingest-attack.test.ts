// The audit listener attacked from outside: the largest EventList it takes, one just over the
// limit, deep JSON, and many connections that never finish a handshake or bring no certificate.
// Each case asserts the outcome and generous bounds, and prints what it measured (the server's RSS
// and the worst latency of the main port's /healthz meanwhile, i.e. the event-loop stall a client
// of the API feels), for docs/security.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { auditEvent, eventList, metric, startAuditServer, type AuditServer } from './ingest-support.js';
import { until, withDeadline } from '../support/deadline.js';

const MiB = 1024 * 1024;

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** Polls /healthz on the main port every 50 ms while `fn` runs; returns fn's result and the worst latency. */
async function watchingHealth<T>(srv: AuditServer, fn: () => Promise<T>): Promise<{ value: T; worstMs: number; peakRss: number }> {
  let stop = false;
  let worstMs = 0;
  let peakRss = rssMiB(srv.pid);
  const probe = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const r = await srv.request('GET', '/healthz', { timeoutMs: 30_000 });
      assert.equal(r.status, 200);
      worstMs = Math.max(worstMs, performance.now() - t0);
      peakRss = Math.max(peakRss, rssMiB(srv.pid));
      await new Promise((res) => setTimeout(res, 50));
    }
  })();
  try {
    const value = await fn();
    return { value, worstMs: Math.round(worstMs), peakRss };
  } finally {
    stop = true;
    await probe;
  }
}

test('attacks on the audit listener', async (t) => {
  const srv = await startAuditServer(t, ['--tls-handshake-timeout=3']);
  const report: Record<string, unknown> = { baselineRssMiB: rssMiB(srv.pid) };

  await t.test('the largest EventList it takes (10 MiB of accepted events) is stored in one batch', async () => {
    const one = JSON.stringify(auditEvent({ uid: 'big-0', responseRV: '1' })).length;
    const n = Math.floor((10 * MiB - 200) / (one + 40));
    const items = Array.from({ length: n }, (_, i) => auditEvent({ uid: `big-${i}`, name: `cm-${i}`, responseRV: String(1000 + i) }));
    const body = Buffer.from(JSON.stringify(eventList(items)));
    assert.ok(body.length <= 10 * MiB, `${body.length} bytes`);
    const t0 = performance.now();
    const { value: r, worstMs, peakRss } = await watchingHealth(srv, () => srv.post('/audit-webhook', body, { timeoutMs: 60_000 }));
    assert.equal(r.status, 200, r.text);
    report.bigList = { events: n, bytes: body.length, ms: Math.round(performance.now() - t0), worstHealthzMs: worstMs, peakRssMiB: peakRss };
    assert.equal(await metric(srv, 'reverser_audit_events_total', { outcome: 'accepted' }), n);
    assert.ok(worstMs < 10_000, `the API stalled ${worstMs} ms`);
  });

  await t.test('one byte over the limit is 413 without reading it all', async () => {
    const body = Buffer.alloc(10 * MiB + 1, 0x20);
    const t0 = performance.now();
    const { value: r, worstMs, peakRss } = await watchingHealth(srv, () => srv.post('/audit-webhook', body, { timeoutMs: 60_000 }).catch((e: Error) => ({ status: 0, text: e.message, body: undefined })));
    // The server answers 413 as soon as the declared length is over; the client may see the
    // connection close before it finished sending.
    assert.ok(r.status === 413 || /ECONNRESET|EPIPE|socket hang up/.test(r.text), `${r.status} ${r.text}`);
    if (r.status === 413) assert.equal(r.body.reason, 'RequestEntityTooLarge');
    report.overLimit = { status: r.status, ms: Math.round(performance.now() - t0), worstHealthzMs: worstMs, peakRssMiB: peakRss };
  });

  await t.test('10 MiB of nesting is a 400 from the depth guard', async () => {
    const half = 5 * MiB - 10;
    const body = Buffer.concat([Buffer.alloc(half, '['), Buffer.alloc(half, ']')]);
    const t0 = performance.now();
    const { value: r, worstMs, peakRss } = await watchingHealth(srv, () => srv.post('/audit-webhook', body, { timeoutMs: 60_000 }));
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.message, /deeper than 100 levels/);
    report.deepJSON = { bytes: body.length, ms: Math.round(performance.now() - t0), worstHealthzMs: worstMs, peakRssMiB: peakRss };
  });

  await t.test('2000 connections that never handshake, and 300 without a certificate, hold nothing for long', async (t2) => {
    const sockets: Socket[] = [];
    // A failed assertion must not leave 2,000 sockets holding the test file open until its deadline.
    t2.after(() => { for (const s of sockets) s.destroy(); });
    const rssBefore = rssMiB(srv.pid);
    const { worstMs, peakRss } = await watchingHealth(srv, async () => {
      // In batches of 200, each connected before the next: 2,000 SYNs at once overflow the listen
      // backlog on a loaded machine, and the kernel's SYN retries (1, 2, 4, 8, 16 s) then delay
      // connections past any bound on the server's own handshake timeout (failed here at load ~10).
      for (let i = 0; i < 2000; i += 200) {
        const batch = Array.from({ length: 200 }, () => {
          const s = tcpConnect(srv.auditPort, '127.0.0.1');
          s.on('error', () => {});
          sockets.push(s);
          return new Promise<void>((resolve) => {
            s.once('connect', () => resolve());
            s.once('error', () => resolve());
            s.once('close', () => resolve());
          });
        });
        await withDeadline(Promise.all(batch), `silent connections ${i + 1}-${i + 200} to connect`, 30_000);
      }
      const noCert = Array.from({ length: 300 }, () =>
        new Promise<string>((resolve) => {
          const s = tlsConnect({ port: srv.auditPort, host: '127.0.0.1', ca: srv.ca, servername: 'localhost' });
          s.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? e.message));
          s.on('secureConnect', () => s.write('POST /audit-webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'));
          s.on('data', () => resolve('answered'));
          s.on('close', () => resolve('closed'));
        }),
      );
      const outcomes = await Promise.all(noCert);
      assert.ok(!outcomes.includes('answered'), `a client without a certificate got an answer: ${outcomes.join(',')}`);
      // The handshake timeout (3 s here) closes the silent ones; the cap closed the rest at once.
      await until(() => sockets.every((s) => s.destroyed || s.closed || s.readyState === 'closed'), 'the silent connections to be closed by the server', 20_000, 100);
    });
    report.idleConnections = { silent: 2000, noCert: 300, rssBeforeMiB: rssBefore, peakRssMiB: peakRss, worstHealthzMs: worstMs };
    // The listener still takes kube-apiserver's posts afterwards.
    const r = await srv.post('/audit-webhook', eventList([auditEvent({ uid: 'after', responseRV: '9' })]));
    assert.equal(r.status, 200);
    assert.ok(peakRss - rssBefore < 200, `RSS grew ${peakRss - rssBefore} MiB`);
    for (const s of sockets) s.destroy();
  });

  report.finalRssMiB = rssMiB(srv.pid);
  console.log(`audit listener attack measurements: ${JSON.stringify(report)}`);
  assert.ok(srv.alive());
});
