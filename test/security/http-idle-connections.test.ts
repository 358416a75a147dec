// #8 item 2: connections that never complete a request must not hold a file descriptor forever.
// With short configured timeouts: raw TCP sockets, stalled TLS handshakes, HTTP/2 sessions that
// send only the preface and SETTINGS, silent HTTP/1.1 connections and half-sent requests are all
// closed by the server, while legitimate clients (and an idle watch) keep working meanwhile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { gitTarget, ns, startServer, GV } from '../support/server.js';
import { h2request, h2session, openFds } from './http-support.js';

const PER_KIND = Number(process.env.IDLE_CONNECTIONS_PER_KIND ?? 100);
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

interface Idle {
  kind: string;
  socket: Socket;
  closedAt?: number;
}

// Each kind connects from its own loopback address (127.0.0.2 ...; the legitimate clients use
// 127.0.0.1): TLS handshakes in progress are bounded per address (src/apiserver/handshakes.ts), so
// silent connections of one kind make that address's later connections wait, not other clients'.
const ADDRESS: Record<string, string> = { tcp: '127.0.0.2', 'tls-stalled': '127.0.0.3', 'h2-preface': '127.0.0.4', 'h1-silent': '127.0.0.5', 'h1-partial': '127.0.0.6' };

function open(kind: string, port: number, ca: string): Promise<Idle> {
  const localAddress = ADDRESS[kind]!;
  return new Promise((resolve, reject) => {
    const idle: Idle = { kind, socket: undefined as unknown as Socket };
    const done = () => resolve(idle);
    let s: Socket;
    if (kind === 'tcp') s = tcpConnect({ host: '127.0.0.1', port, localAddress }, done);
    else if (kind === 'tls-stalled') {
      // A TLS ClientHello cut short: the handshake never completes.
      s = tcpConnect({ host: '127.0.0.1', port, localAddress }, () => {
        s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
        done();
      });
    } else {
      const alpn = kind === 'h2-preface' ? ['h2'] : ['http/1.1'];
      // tls.connect hands localAddress to net.connect (its type does not list it).
      s = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: alpn, ...({ localAddress } as object) }, () => {
        if (kind === 'h2-preface') s.write(Buffer.concat([PREFACE, EMPTY_SETTINGS]));
        if (kind === 'h1-partial') s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
        done();
      });
    }
    idle.socket = s;
    s.on('error', () => {});
    s.on('data', () => {});
    s.once('close', () => {
      idle.closedAt = Date.now();
      reject(new Error(`a ${kind} connection closed before it was open`)); // no-op once open
    });
    s.once('error', reject);
  });
}

test('idle and never-completed connections are closed; legitimate clients keep working', { timeout: 90_000 }, async (t) => {
  const server = await startServer(['--idle-connection-timeout=3', '--tls-handshake-timeout=3']);
  t.after(() => server.stop());
  const admin = h2session(server);
  t.after(() => admin.close());
  assert.equal((await h2request(admin, 'POST', ns('default'), { body: JSON.stringify(gitTarget('a')) })).status, 201);
  const fdsBefore = openFds(server.pid);

  // An idle watch on the legitimate session: long-running requests are not idle connections.
  const watch = admin.request({ ':path': `${GV}/namespaces/default/gittargets?watch=true&resourceVersion=0&timeoutSeconds=30` });
  const events: string[] = [];
  watch.setEncoding('utf8');
  watch.on('data', (c: string) => events.push(...c.split('\n').filter(Boolean).map((l) => JSON.parse(l).type)));

  const started = Date.now();
  const kinds = ['tcp', 'tls-stalled', 'h2-preface', 'h1-silent', 'h1-partial'];
  const idle: Idle[] = [];
  for (const kind of kinds) idle.push(...(await Promise.all(Array.from({ length: PER_KIND }, () => open(kind, server.port, server.ca)))));
  const opened = Date.now() - started;
  t.after(() => idle.forEach((c) => c.socket.destroy()));
  const fdsDuring = openFds(server.pid);
  t.diagnostic(`server fds: ${fdsBefore} before, ${fdsDuring} with ${idle.length} idle connections opened in ${opened} ms`);
  assert.ok(opened > 2_500 || fdsDuring >= fdsBefore + idle.length * 0.9, `the idle connections reached the server (${fdsDuring} fds)`);

  // Legitimate traffic while they are open: a new TLS client and the existing session.
  const fresh = h2session(server);
  t.after(() => fresh.close());
  for (const s of [fresh, admin]) {
    const r = await h2request(s, 'GET', ns('default'), { timeoutMs: 2_000 });
    assert.equal(r.status, 200);
    assert.ok(r.ms < 500, `list took ${r.ms} ms`);
  }

  // Everything idle is closed by the server within timeout + slack.
  const deadline = Date.now() + 10_000;
  while (idle.some((c) => c.closedAt === undefined) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const open_ = kinds.map((k) => `${k}: ${idle.filter((c) => c.kind === k && c.closedAt === undefined).length} open`);
  assert.ok(idle.every((c) => c.closedAt !== undefined), `still open after 10 s: ${open_.join(', ')}`);
  const latest = Math.max(...idle.map((c) => c.closedAt!)) - started;
  t.diagnostic(`all ${idle.length} idle connections closed ${latest} ms after the first was opened`);

  // The idle watch outlived the idle timeout and still delivers events.
  assert.equal(watch.closed, false);
  assert.equal((await h2request(admin, 'POST', ns('default'), { body: JSON.stringify(gitTarget('b')) })).status, 201);
  const until = Date.now() + 5_000;
  while (events.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(events, ['ADDED', 'ADDED']);
  watch.close();
  await new Promise((r) => setTimeout(r, 200));
  const fdsAfter = openFds(server.pid);
  t.diagnostic(`server fds after: ${fdsAfter}`);
  assert.ok(fdsAfter <= fdsBefore + 5, `fds ${fdsBefore} -> ${fdsAfter}`);
});

test('an HTTP/2 session may open at most --http2-max-streams-per-connection streams at once', { timeout: 30_000 }, async (t) => {
  const server = await startServer(['--http2-max-streams-per-connection=5']);
  t.after(() => server.stop());
  const s = h2session(server);
  t.after(() => s.close());
  await h2request(s, 'GET', '/healthz');
  assert.equal(s.remoteSettings.maxConcurrentStreams, 5);
});
