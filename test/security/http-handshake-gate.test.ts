// TLS handshakes in progress are bounded per client address (src/apiserver/handshakes.ts,
// --max-tls-handshakes-per-address): one address cannot make the server run more handshakes at
// once than the bound, however many connections it opens; its further connections wait their
// turn, and are closed if still waiting after --tls-handshake-timeout. Other addresses are not
// affected. In total (--max-tls-handshakes) neither can many addresses together; waiting
// addresses take turns, and established connections keep being answered. The "attacker" holds handshakes open with ClientHellos cut short and connects from
// 127.0.0.2 (all of 127/8 is loopback on Linux); the bystander connects from 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Duplex } from 'node:stream';
import { startServer } from '../support/server.js';
import { until, withDeadline } from '../support/deadline.js';
import { h2request, h2session } from './http-support.js';

const ATTACKER = '127.0.0.2';
const BYSTANDER = '127.0.0.1';

/** A connection whose TLS handshake never completes: the first bytes of a ClientHello, then nothing. */
function stalled(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host: '127.0.0.1', port, localAddress: ATTACKER }, () => {
      s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
      resolve(s);
    });
    s.on('error', reject);
  });
}

/** A real TLS client: resolves when its handshake completed ('secure'), or 'closed' if the server closed it first. */
function handshake(port: number, ca: string, localAddress: string): { socket: TLSSocket; done: Promise<{ outcome: 'secure' | 'closed'; ms: number }> } {
  const started = performance.now();
  // tls.connect hands localAddress to net.connect (its type does not list it).
  const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'], ...({ localAddress } as object) });
  const done = new Promise<{ outcome: 'secure' | 'closed'; ms: number }>((resolve) => {
    socket.once('secureConnect', () => resolve({ outcome: 'secure', ms: performance.now() - started }));
    socket.once('close', () => resolve({ outcome: 'closed', ms: performance.now() - started }));
    socket.on('error', () => {});
  });
  return { socket, done };
}

const settledWithin = <T>(p: Promise<T>, ms: number): Promise<T | 'pending'> => Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);

test('at most --max-tls-handshakes-per-address handshakes run per address; the next waits its turn, other addresses do not', { timeout: 60_000 }, async (t) => {
  const server = await startServer(['--max-tls-handshakes-per-address=4', '--tls-handshake-timeout=3']);
  t.after(() => server.stop());
  const held: Socket[] = [];
  const clients: TLSSocket[] = [];
  t.after(() => [...held, ...clients].forEach((s) => s.destroy()));

  // Three handshakes held open by the attacker: a fourth from the same address still runs.
  for (let i = 0; i < 3; i++) held.push(await stalled(server.port));
  const fourth = handshake(server.port, server.ca, ATTACKER);
  clients.push(fourth.socket);
  assert.equal((await withDeadline(fourth.done, 'the 4th handshake from the attacker address', 2_000)).outcome, 'secure');

  // Four held: the bound. The next connection from that address waits (its ClientHello unread) ...
  held.push(await stalled(server.port));
  const waiting = handshake(server.port, server.ca, ATTACKER);
  clients.push(waiting.socket);
  // ... while another address completes at once.
  const other = handshake(server.port, server.ca, BYSTANDER);
  clients.push(other.socket);
  const o = await withDeadline(other.done, 'the handshake from another address', 2_000);
  assert.equal(o.outcome, 'secure');
  assert.equal(await settledWithin(waiting.done, 1_000), 'pending', 'a 5th handshake ran while 4 of its address were in progress');

  // One held handshake goes away: the waiting one takes its slot and completes.
  held.shift()!.destroy();
  const w = await withDeadline(waiting.done, 'the waiting handshake after a slot freed', 2_000);
  assert.equal(w.outcome, 'secure');
  t.diagnostic(`other address: ${o.ms.toFixed(0)} ms; the waiting one: ${w.ms.toFixed(0)} ms`);
});

test('a connection still waiting for a handshake slot after --tls-handshake-timeout is closed, never served', { timeout: 60_000 }, async (t) => {
  const server = await startServer(['--max-tls-handshakes-per-address=2', '--tls-handshake-timeout=2']);
  t.after(() => server.stop());
  // Two stalled handshakes hold the slots until their timeout (~2 s after t0); two more, a second
  // later, wait for them and then hold the slots until ~4 s after t0. A real client queued behind
  // those at ~1 s would get its turn at ~4 s: its wait runs out first (~3 s).
  const held: Socket[] = [];
  t.after(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < 2; i++) held.push(await stalled(server.port));
  await new Promise((r) => setTimeout(r, 1_000));
  for (let i = 0; i < 2; i++) held.push(await stalled(server.port));
  const starved = handshake(server.port, server.ca, ATTACKER);
  t.after(() => starved.socket.destroy());
  const s = await withDeadline(starved.done, 'the starved connection to be closed', 8_000);
  t.diagnostic(`starved connection: ${s.outcome} after ${s.ms.toFixed(0)} ms`);
  assert.equal(s.outcome, 'closed');
  assert.ok(s.ms >= 1_900 && s.ms < 2_900, `closed after ${s.ms} ms (the timeout is 2 s; its turn would have come after ~3 s)`);
});

/**
 * A handshake the server has started and never sees finish: the ClientHello goes through, the
 * server answers it (its signature and key exchange done, `answered`), and the client's next
 * flight is dropped, so the handshake stays in progress until the socket closes or times out.
 * A connection still waiting for a slot gets no answer.
 */
function halfHandshake(port: number, localAddress: string): { raw: Socket; answered: Promise<void>; isAnswered(): boolean } {
  const raw = tcpConnect({ host: '127.0.0.1', port, localAddress });
  let got = false;
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  const pipe = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      // The client speaks again only after the server's answer: all it sends before is the hello.
      if (!got) raw.write(chunk);
      cb();
    },
  });
  raw.on('data', (c: Buffer) => {
    if (!got) {
      got = true;
      answer();
    }
    pipe.push(c);
  });
  raw.on('error', () => {});
  raw.on('close', () => pipe.destroy());
  const client = tlsConnect({ socket: pipe, servername: 'localhost', rejectUnauthorized: false });
  client.on('error', () => {});
  return { raw, answered, isAnswered: () => got };
}

test('at most --max-tls-handshakes handshakes run over all addresses, however many addresses connect; waiting addresses take turns; an established client keeps its answers', { timeout: 60_000 }, async (t) => {
  const server = await startServer(['--max-tls-handshakes=8', '--max-tls-handshakes-per-address=16', '--tls-handshake-timeout=30']);
  t.after(() => server.stop());
  const established = h2session(server);
  t.after(() => established.destroy());
  assert.equal((await h2request(established, 'GET', '/healthz')).status, 200);
  const half: Array<ReturnType<typeof halfHandshake>> = [];
  const clients: TLSSocket[] = [];
  t.after(() => [...half.map((h) => h.raw), ...clients].forEach((s) => s.destroy()));

  // 20 addresses (127.0.0.10-29), 3 connections each: the server starts 8 handshakes, no more.
  for (let a = 10; a < 30; a++) for (let i = 0; i < 3; i++) half.push(halfHandshake(server.port, `127.0.0.${a}`));
  await until(() => half.filter((h) => h.isAnswered()).length >= 8, '8 handshakes to start', 10_000, 10);
  // The established client is answered meanwhile; a new connection waits like the others.
  const healthz: number[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await h2request(established, 'GET', '/healthz', { timeoutMs: 5_000 });
    assert.equal(r.status, 200);
    healthz.push(r.ms);
  }
  const fresh = handshake(server.port, server.ca, BYSTANDER);
  clients.push(fresh.socket);
  assert.equal(await settledWithin(fresh.done, 1_000), 'pending', 'a new connection started a 9th handshake');
  assert.equal(half.filter((h) => h.isAnswered()).length, 8, 'handshakes started over 20 addresses');
  t.diagnostic(`60 connections from 20 addresses: 8 handshakes started; established client's /healthz max ${Math.max(...healthz).toFixed(0)} ms`);
  assert.ok(Math.max(...healthz) < 2_000, `/healthz on the established connection took ${Math.max(...healthz)} ms`);

  // Every slot held, 52 waiting from 20 addresses, then the bystander's. All of the first 8 end:
  // the next 8 go to 8 different addresses (each address's first waiting connection, in turn),
  // not to the 8 oldest connections (which were 3 per address).
  const started = new Set(half.filter((h) => h.isAnswered()));
  for (const h of started) h.raw.destroy();
  await until(() => half.filter((h) => h.isAnswered() && !started.has(h)).length >= 8, 'the next 8 handshakes to start', 10_000, 10);
  await new Promise((r) => setTimeout(r, 300));
  const next = half.filter((h) => h.isAnswered() && !started.has(h));
  assert.equal(next.length, 8, 'handshakes started after 8 ended');
  const addressesOf = (hs: typeof half) => new Set(hs.map((h) => h.raw.localAddress)).size;
  assert.equal(addressesOf(next), 8, `the 8 new handshakes came from ${addressesOf(next)} addresses`);
  // Everyone else gone: the bystander, queued behind 52 connections of 20 addresses, is served.
  for (const h of half) h.raw.destroy();
  assert.equal((await withDeadline(fresh.done, 'the bystander once the queue is gone', 5_000)).outcome, 'secure');
});
