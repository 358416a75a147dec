// The bystander of every attack (harness.ts), in a worker thread of its own: it GETs /healthz every
// 20 ms over its own connection while a phase runs. On the bench's main thread its timings also held
// the bench's own work: building a 3 MiB body, and reading the 7 MB answer of a server-side apply
// (with its garbage) put 100+ ms into the bystander's p99 while the server's own event-loop delay
// stayed at 20 ms. test/security/healthz-poller.ts does the same for the tests.
//
// Protocol: the parent posts 'start' at a phase's start and 'stop' at its end; the worker answers
// 'stop' with { ms: number[] }, the latencies of that phase, and is then ready for the next 'start'.
import { parentPort, workerData } from 'node:worker_threads';
import { reconnecting } from './harness.js';

const { url, tls } = workerData as { url: string; tls: object };
const client = reconnecting(url, tls);
let phase: { ms: number[]; running: boolean; done: Promise<void> } | undefined;

async function ping(p: { ms: number[]; running: boolean }): Promise<void> {
  while (p.running) {
    const r = await client.request('GET', '/healthz', { timeoutMs: 120_000 }).catch(() => undefined);
    if (r) p.ms.push(r.ms);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

parentPort!.on('message', async (m: 'start' | 'stop' | 'close') => {
  if (m === 'start') {
    const p = { ms: [] as number[], running: true, done: Promise.resolve() };
    p.done = ping(p);
    phase = p;
  } else if (m === 'stop' && phase) {
    const p = phase;
    phase = undefined;
    p.running = false;
    await p.done;
    parentPort!.postMessage({ ms: p.ms });
  } else if (m === 'close') {
    client.close();
    parentPort!.close();
  }
});
