// The bystander of the list attacks (list-attack-support.ts) in a worker thread: it polls /healthz
// every 10 ms over its own HTTP/2 connection until told to stop, then posts the latencies. In a
// thread of its own, its timings are the server's: on the test's thread, they also held the
// test's own work, such as parsing the 7 MB answer of a server-side apply (100-600 ms on a loaded
// machine, counted as /healthz latency before).
import { parentPort, workerData } from 'node:worker_threads';
import { connect } from 'node:http2';
import { h2request } from './http-support.js';

export interface PollerOptions {
  url: string;
  ca: string;
  cert: string;
  key: string;
}

const { url, ca, cert, key } = workerData as PollerOptions;
const session = connect(url, { ca, cert, key });
let polling = true;
const ms: number[] = [];
parentPort!.once('message', () => (polling = false));

async function poll(): Promise<void> {
  const r = await h2request(session, 'GET', '/healthz', { timeoutMs: 120_000 });
  if (r.status !== 200) throw new Error(`/healthz answered ${r.status}: ${r.text}`);
}

try {
  // The connection and its first answer are not counted: the test starts once they are done.
  await poll();
  parentPort!.postMessage({ ready: true });
  while (polling) {
    const started = performance.now();
    await poll();
    ms.push(performance.now() - started);
    await new Promise((ok) => setTimeout(ok, 10));
  }
  parentPort!.postMessage({ ms });
} catch (e) {
  parentPort!.postMessage({ error: String((e as Error).stack ?? e) });
} finally {
  session.close();
}
