// The kubeconfig attack as load: a tenant fills 30 Secrets with the worst kubeconfigs that reach
// the parser (64 KiB of keys just under the token limit, 30,000 nested brackets, 1 MiB of aliases: the most a Secret holds)
// and points 30 GitTargets at them, so the mirror reads and vets them on every re-check. Measured
// while it runs: the server's RSS, its event-loop delay (prom-client's nodejs_eventloop_lag_*), and
// another client's /healthz latency. Bounds are loose (a shared 2-core machine); the printed
// figures go to docs/security.md.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { until } from '../support/deadline.js';
import { ok, startMirroringServer, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

let hosting: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

before(async () => {
  hosting = await startSandbox();
  server = await startMirroringServer(hosting);
  await ok(hosting.kubectl, ['create', 'namespace', 'tenant']);
});

after(async () => {
  await server?.stop();
  await hosting?.destroy();
});

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function lag(): Promise<{ max: number; p99: number }> {
  const text = (await server.get('/metrics')).text;
  const v = (n: string) => Number(new RegExp(`^${n} ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { max: v('nodejs_eventloop_lag_max_seconds'), p99: v('nodejs_eventloop_lag_p99_seconds') };
}

async function healthz(ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const t0 = performance.now();
    const r = await server.get('/healthz');
    assert.equal(r.status, 200);
    out.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 100));
  }
  return out.sort((a, b) => a - b);
}
const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor(s.length * p))]!;

test('30 worst-case kubeconfig Secrets: refused, and /healthz, memory and the event loop stay bounded', { timeout: 240_000 }, async () => {
  const base = await healthz(4_000);
  const rss0 = rssMiB(server.pid);
  await lag(); // resets the event-loop histogram
  const user = `users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\n`;
  const kinds: Record<string, { text: (i: number) => string; reason: string }> = {
    wide: { text: (i) => `${user}preferences: {${Array.from({ length: 400 }, (_, k) => `k${i}x${k}: v`).join(', ')}}\n`, reason: 'KubeConfigFieldNotAllowed' },
    deep: { text: (i) => `${user}x${i}: ${'['.repeat(30_000)}${']'.repeat(30_000)}\n`, reason: 'KubeConfigInvalid' },
    aliases: { text: (i) => `${user}a: &a x${i}\nb: [${Array(340_000).fill('*a').join(',')}]\n`, reason: 'KubeConfigInvalid' },
  };
  const names: Array<[string, string]> = [];
  for (const [kind, k] of Object.entries(kinds)) {
    for (let i = 0; i < 10; i++) {
      const name = `${kind}-${i}`;
      names.push([name, k.reason]);
      const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'tenant' }, data: { value: Buffer.from(k.text(i)).toString('base64') } };
      await ok(hosting.kubectl, ['create', '-f', '-'], JSON.stringify(secret));
      const gt = {
        apiVersion: 'configbutler.ai/v1alpha1',
        kind: 'GitTarget',
        metadata: { name, namespace: 'tenant' },
        spec: { repository: { url: `local:${name}` }, branch: 'main', path: 'm', source: { kubeConfig: { secretRef: { name } } }, resources: [{ group: '', version: 'v1', resource: 'configmaps' }] },
      };
      await ok(server.kubectl, ['apply', '-f', '-'], JSON.stringify(gt));
    }
  }
  // While the mirror reads and vets them (and re-checks every 10 s): another client's /healthz.
  const during = await healthz(25_000);
  const loop = await lag();
  const rss1 = rssMiB(server.pid);
  for (const [name, reason] of names) {
    await until(async () => {
      const obj = parse(await ok(server.kubectl, ['get', 'gittarget', name, '-n', 'tenant', '-o', 'yaml']));
      return (obj.status?.conditions ?? []).some((c: any) => c.type === 'Validated' && c.status === 'False' && c.reason === reason);
    }, `${name} refused with ${reason}`, 30_000, 250);
  }
  const figures = {
    healthzBaseline: { p50: pct(base, 0.5), p99: pct(base, 0.99), max: base.at(-1)! },
    healthzDuring: { p50: pct(during, 0.5), p99: pct(during, 0.99), max: during.at(-1)!, samples: during.length },
    eventLoopLagMs: loop,
    rssMiB: { before: rss0, after: rss1 },
  };
  process.stdout.write(`# ${JSON.stringify(figures, (_k, v) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v))}\n`);
  assert.ok(figures.healthzDuring.max < 2_000, `/healthz took ${figures.healthzDuring.max} ms`);
  assert.ok(loop.max < 1_500, `event loop blocked ${loop.max} ms`);
  assert.ok(rss1 - rss0 < 300, `RSS grew ${rss1 - rss0} MiB`);
});
