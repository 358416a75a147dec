// The connection guard's counts (src/apiserver/connections.ts: idle connections closed, failed TLS
// handshakes, waits for a handshake slot) are logged one report interval after the first of them,
// with no timer while nothing happens: a server nobody connects to does not wake up for them (it
// was a 60 s interval whatever happened). Counted: the report timers the guard creates, and the
// report lines, on a real TLS/HTTP2 server on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createSecureServer } from 'node:http2';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import { DEFAULT_CONNECTION_LIMITS, guardConnections } from '../../src/apiserver/connections.js';
import type { Logger } from '../../src/metrics/logger.js';
import { issueServerCert, makeCA } from '../support/pki.js';
import { until } from '../support/deadline.js';

const REPORT_MS = 300;

test('no report timer while nothing happens; one report of the counts after a failed handshake, then none again', { timeout: 20_000 }, async (t) => {
  const ca = makeCA('report-ca');
  const leaf = issueServerCert(ca, 'localhost');
  const server = createSecureServer({ key: leaf.keyPem, cert: leaf.certPem, allowHTTP1: true });
  const lines: Array<Record<string, unknown>> = [];
  const log: Logger = { error() {}, warn() {}, info() {}, debug: (msg, f) => void lines.push({ msg, ...f }), enabled: () => true };
  // Every timer of the report's interval created from now on, by setTimeout or setInterval.
  let reportTimers = 0;
  const realTimeout = globalThis.setTimeout;
  const realInterval = globalThis.setInterval;
  globalThis.setTimeout = ((fn: () => void, ms?: number, ...a: unknown[]) => (ms === REPORT_MS && reportTimers++, realTimeout(fn, ms, ...a))) as typeof setTimeout;
  globalThis.setInterval = ((fn: () => void, ms?: number, ...a: unknown[]) => (ms === REPORT_MS && reportTimers++, realInterval(fn, ms, ...a))) as typeof setInterval;
  t.after(() => {
    globalThis.setTimeout = realTimeout;
    globalThis.setInterval = realInterval;
  });
  guardConnections(server, DEFAULT_CONNECTION_LIMITS, log, REPORT_MS);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  // Idle for several report intervals: no timer, no line.
  await new Promise((r) => realTimeout(r, 4 * REPORT_MS));
  assert.equal(reportTimers, 0, 'no report timer on an idle server');
  // A connection that sends garbage instead of a ClientHello: one failed handshake, one report.
  const s = tcpConnect({ host: '127.0.0.1', port }, () => s.write('not TLS\r\n\r\n'));
  s.on('error', () => undefined);
  s.on('data', () => undefined);
  await until(() => lines.length === 1, 'the report of the failed handshake', 5_000, 10);
  assert.deepEqual(lines, [{ msg: 'closed idle connections', idle: 0, tlsHandshakeFailures: 1, waitedForHandshakeSlot: 0 }]);
  assert.equal(reportTimers, 1, 'one timer for the connection and its failed handshake');
  s.destroy();
  // Idle again: no timer, no further line.
  await new Promise((r) => realTimeout(r, 4 * REPORT_MS));
  assert.equal(reportTimers, 1);
  assert.equal(lines.length, 1);
});
