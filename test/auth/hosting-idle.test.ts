// The hosting cluster client's keep-alive connections close once idle (src/auth/hosting.ts
// HOSTING_IDLE_SOCKET_MS): a burst of calls at start-up leaves no connection open for the other
// side to close at a time of its choosing (a wake-up of an idle server), nor a descriptor held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeHostingCluster } from '../support/fake-hosting-cluster.js';
import { HostingClient, HOSTING_IDLE_SOCKET_MS } from '../../src/auth/hosting.js';
import { until } from '../support/deadline.js';

/** A call the double answers 200 with nothing set up (a list of namespaces). */
const CM = '/api/v1/namespaces';

test('hosting client: parallel calls open several connections; each closes after the idle time, and a call after that opens a new one', { timeout: 20_000 }, async (t) => {
  assert.equal(HOSTING_IDLE_SOCKET_MS, 30_000);
  const fake = await startFakeHostingCluster();
  t.after(() => fake.close());
  const idleMs = 400;
  const client = await HostingClient.create({ kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 2_000, idleSocketMs: idleMs });
  t.after(() => client.close());
  const burst = await Promise.all(Array.from({ length: 4 }, () => client.request('GET', CM)));
  assert.deepEqual(burst.map((r) => r.status), [200, 200, 200, 200]);
  const open = fake.openConnections();
  assert.ok(open >= 2, `${open} connections for 4 parallel calls`);
  // Reused while in use within the idle time: one call more opens nothing.
  await client.request('GET', CM);
  assert.ok(fake.openConnections() <= open);
  const t0 = Date.now();
  await until(() => fake.openConnections() === 0, 'the idle connections to close', 5_000, 10);
  const ms = Date.now() - t0;
  t.diagnostic(`${open} connections closed by the client ${ms} ms after their last call (idle time ${idleMs} ms)`);
  assert.ok(ms >= idleMs - 100, `closed after ${ms} ms, before the idle time`);
  assert.equal((await client.request('GET', CM)).status, 200, 'a call after that connects again');
  assert.equal(fake.openConnections(), 1);
});
