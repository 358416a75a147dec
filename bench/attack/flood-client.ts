// The attacker of the "Metrics label cardinality" attack (attacks-http.ts), in a process of its
// own, as idle-client.ts is for idle connections: 64 requests in flight and their answers parsed
// on the event loop that times the bystander's /healthz made the attacker's own delay show as the
// server's (as a tenant, whose 403s carry the 1,000-character name twice, /healthz p99 read
// 118 ms while the server's own event-loop delay stayed at 60 ms).
//
// Usage: node flood-client.js SPEC_FILE, where SPEC_FILE is JSON { url, total, inFlight,
// sessions, tls: { ca, cert?, key? } }. Sends `total` GETs of `${gv}/namespaces/x/<1,000 random hex
// characters>`, prints `done <json {status: count}> <seconds>` and exits.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { reconnecting } from './harness.js';

const GV = '/apis/configbutler.ai/v1alpha1';
const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as { url: string; total: number; inFlight: number; sessions: number; tls: object };
const sessions = Array.from({ length: spec.sessions }, () => reconnecting(spec.url, spec.tls));
const codes: Record<string, number> = {};
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: spec.inFlight }, async (_, w) => {
    while (next < spec.total) {
      next++;
      const r = await sessions[w % spec.sessions]!.request('GET', `${GV}/namespaces/x/${randomBytes(500).toString('hex')}`, { timeoutMs: 60_000 });
      codes[r.status] = (codes[r.status] ?? 0) + 1;
    }
  }),
);
sessions.forEach((s) => s.close());
console.log(`done ${JSON.stringify(codes)} ${((performance.now() - started) / 1000).toFixed(1)}`);
process.exit(0);
