// The attacker of the "Idle connections" attack (attacks-http.ts), in a process of its own: its
// thousands of client-side TLS handshakes must not run on the event loop that times the
// bystander's /healthz requests, or the table would show the attacker's own delay as the
// server's. Each kind connects from its own loopback address (127.0.0.2, .3, .4; the bench's
// clients use 127.0.0.1), as attackers with a few addresses would.
//
// Usage: node idle-client.js PORT PER_KIND CA_FILE WAIT_S. Prints `opened N` once every
// connection is open (or failed), then `closed <json: ms after start per connection, null for
// still open>` when all are closed or WAIT_S seconds have passed, and exits.
import { readFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

const [port, perKind, caFile, waitS] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]!, Number(process.argv[5])];
const ca = readFileSync(caFile, 'utf8');
const KINDS = { tcp: '127.0.0.2', 'h2-preface': '127.0.0.3', 'tls-silent': '127.0.0.4' } as const;
const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

const started = Date.now();
const closedAt: Array<number | null> = [];
const sockets: Socket[] = [];
const opening: Promise<void>[] = [];
for (const [kind, localAddress] of Object.entries(KINDS)) {
  for (let i = 0; i < perKind; i++) {
    const index = closedAt.push(null) - 1;
    opening.push(
      new Promise<void>((resolve) => {
        let s: Socket;
        if (kind === 'tcp') s = tcpConnect({ host: '127.0.0.1', port, localAddress }, resolve);
        else {
          // tls.connect hands localAddress to net.connect (its type does not list it).
          s = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: [kind === 'h2-preface' ? 'h2' : 'http/1.1'], ...({ localAddress } as object) }, () => {
            if (kind === 'h2-preface') s.write(PREFACE);
            resolve();
          });
        }
        s.on('error', () => resolve());
        s.on('data', () => {});
        s.once('close', () => {
          closedAt[index] = Date.now() - started;
          resolve();
        });
        sockets.push(s);
      }),
    );
  }
}
await Promise.all(opening);
console.log(`opened ${sockets.length}`);
const deadline = Date.now() + waitS * 1000;
while (closedAt.some((c) => c === null) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
console.log(`closed ${JSON.stringify(closedAt)}`);
sockets.forEach((s) => s.destroy());
process.exit(0);
