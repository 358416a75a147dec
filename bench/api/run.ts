// The API benchmark (`npm run bench -- api [--quick] [--only=get,list,create,watch,rss,delegated]`).
// Starts a real redis-server, the reverser server (Redis storage, HTTPS, dev PKI) and the floor
// (bench/api/floor.ts: bare fastify over the same TLS doing the raw Redis operation), fills 10,000
// GitTargets, then measures server and floor interleaved (A/B, B/A, ...) and prints each metric
// with its ratio and target. Results are recorded by hand in docs/benchmarks.md.
import { mkdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type https from 'node:https';
import { cleanup, freePort, rssMiB, startChild, startRedis, tempDir, type Child } from '../common/proc.js';
import { agentFor, fmt, median, quantile, request, runLoad, type LoadResult, type Req, type Target } from '../common/load.js';
import { fanout, type FanoutResult } from './watch.js';
import { startFakeHostingCluster, type FakeHostingCluster } from '../../test/support/fake-hosting-cluster.js';
import { issueCertificate } from '../../src/certs/pki.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const storage = argv.find((a) => a.startsWith('--storage='))?.slice(10) ?? 'redis';
const want = (s: string) => !only || only.includes(s);

const N = 10_000;
const WATCHERS = 1_000;
const CONCURRENCY = 16;
const P = quick
  ? { rounds: 3, getMs: 1500, listMs: 2000, createMs: 1500, warmMs: 500, events: 10 }
  : { rounds: 5, getMs: 3000, listMs: 3000, createMs: 2000, warmMs: 1000, events: 20 };

const GROUP_PATH = '/apis/configbutler.ai/v1alpha1';
const NS = 'bench';
const OBJECTS_KEY = 'reverser:{c:_}:obj:configbutler.ai/gittargets';
const here = fileURLToPath(new URL('.', import.meta.url));
const MAIN = join(here, '../../src/cli/main.js');
const FLOOR = join(here, 'floor.js');

const name = (i: number) => `gt-${String(i).padStart(5, '0')}`;
function gitTarget(n: string, i: number): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: n, labels: { team: `team-${i % 50}`, tier: 'bench' } },
    spec: {
      repository: { url: `https://git.example.com/org/config-${i % 100}.git`, secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: `tenants/${n}`,
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [`team-${i % 50}`], labelSelector: 'app=web' }],
      commit: { idleSeconds: 5, maxAgeSeconds: 600, mode: 'Auto' },
      // Suspended, so a GitTarget controller (if one runs in the server) leaves them alone.
      suspend: true,
    },
  });
}

interface Row {
  metric: string;
  unit: string;
  server: number;
  floor?: number;
  ratio?: number;
  target: string;
  met?: boolean;
  note?: string;
}
const rows: Row[] = [];
const log = (s: string) => process.stdout.write(`${s}\n`);

async function startServer(dataDir: string, certDir: string, redisUrl: string, extra: string[]): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const args = [MAIN, 'serve', `--storage=${storage}`, '--redis-url', redisUrl, '--data-dir', dataDir, '--cert-dir', certDir, '--secure-port', String(port), ...extra];
  // BENCH_SERVER_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the servers.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = await startChild('reverser server', process.execPath, [...nodeArgs, ...args], /"msg":"serving"/);
  return { child, port };
}

/** Alternates A/B and B/A each round so slow drift of the machine hits both sides alike. */
async function interleaved<T>(rounds: number, a: () => Promise<T>, b: () => Promise<T>): Promise<{ a: T[]; b: T[] }> {
  const out = { a: [] as T[], b: [] as T[] };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      out.a.push(await a());
      out.b.push(await b());
    } else {
      out.b.push(await b());
      out.a.push(await a());
    }
  }
  return out;
}

function check(r: LoadResult, what: string): LoadResult {
  if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors of ${r.count}; first: ${r.firstError}`);
  return r;
}

/** One full read of the collection following continue tokens; returns [ms, pages, bytes]. */
async function traverse(t: Target, agent: https.Agent, first: string, nextPath: (cont: string) => string): Promise<[number, number, number]> {
  const t0 = performance.now();
  let path = first;
  let pages = 0;
  let bytes = 0;
  for (;;) {
    const r = await request(t, agent, { method: 'GET', path });
    if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    pages++;
    bytes += r.bytes;
    const m = /"continue":"([^"]*)"/.exec(r.body.slice(0, 2000));
    if (!m || m[1] === '') break;
    path = nextPath(m[1]!);
  }
  return [performance.now() - t0, pages, bytes];
}

/** Heap figures from the server's /metrics (prom-client default metrics). */
async function heapOf(t: Target, agent: https.Agent): Promise<string> {
  const r = await request(t, agent, { method: 'GET', path: '/metrics' });
  const v = (m: string) => Number(new RegExp(`^${m} ([0-9.e+]+)`, 'm').exec(r.body)?.[1] ?? NaN) / 1e6;
  return `V8 heap used ${fmt(v('nodejs_heap_size_used_bytes'), 0)} MB of ${fmt(v('nodejs_heap_size_total_bytes'), 0)} MB, external ${fmt(v('nodejs_external_memory_bytes'), 0)} MB`;
}

async function timedLoop(ms: number, fn: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  do out.push(await fn());
  while (performance.now() < end);
  return out;
}

async function main(): Promise<void> {
  const tmp = tempDir('reverser-bench-api-');
  let fake: FakeHostingCluster | undefined;
  const onSignal = () => {
    void cleanup([tmp]).then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const started = Date.now();
    log(`API benchmark: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), node ${process.version}, ${quick ? 'quick' : 'full'} run, storage=${storage}`);
    mkdirSync(join(tmp, 'redis'));
    const redis = await startRedis(join(tmp, 'redis'));
    const certDir = join(tmp, 'certs');
    const A = await startServer(join(tmp, 'data'), certDir, redis.url, ['--authorization-mode=AlwaysAllow']);
    const pem = (f: string) => readFileSync(join(certDir, f), 'utf8');
    const adminTLS = { ca: pem('ca.crt'), cert: pem('admin.crt'), key: pem('admin.key') };
    const floorPort = await freePort();
    const floorCfg = {
      port: floorPort,
      redisUrl: redis.url,
      certFile: join(certDir, 'apiserver.crt'),
      keyFile: join(certDir, 'apiserver.key'),
      caFile: join(certDir, 'ca.crt'),
      objectsKey: OBJECTS_KEY,
      floorObjectsKey: 'floor:{c:_}:obj:gittargets',
      floorRVKey: 'floor:{g}:rv',
      channel: 'floor:events',
    };
    await startChild('floor', process.execPath, [FLOOR, JSON.stringify(floorCfg)], /floor listening/);
    const server: Target = { host: '127.0.0.1', port: A.port, tls: adminTLS };
    const floor: Target = { host: '127.0.0.1', port: floorPort, tls: adminTLS };
    const sAgent = agentFor(server, CONCURRENCY);
    const fAgent = agentFor(floor, CONCURRENCY);
    log(`redis pid ${redis.child.pid}, server pid ${A.child.pid} on :${A.port}, floor on :${floorPort}, tmp ${tmp}`);

    // ---- fill ---------------------------------------------------------------------------
    const fill = check(
      await runLoad(server, sAgent, {
        durationMs: Infinity,
        maxRequests: N,
        concurrency: CONCURRENCY,
        expect: 201,
        next: (i) => ({ method: 'POST', path: `${GROUP_PATH}/namespaces/${NS}/gittargets`, body: gitTarget(name(i), i) }),
      }),
      'fill',
    );
    log(`filled ${N} GitTargets in ${fmt(fill.seconds, 1)} s (${fmt(fill.rps, 0)}/s)`);
    const one = await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${name(0)}` });
    const floorOne = await request(floor, fAgent, { method: 'GET', path: `/floor/obj/${NS}/${name(0)}` });
    if (one.body !== floorOne.body) throw new Error(`floor and server return different bytes for ${name(0)}:\n${one.body}\n${floorOne.body}`);
    log(`object size: ${one.bytes} bytes (server and floor return identical bytes)`);

    // ---- RSS with 10,000 cached ----------------------------------------------------------
    if (want('rss')) {
      const l = await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets` });
      const items = (JSON.parse(l.body) as { items: unknown[] }).items.length;
      if (items !== N) throw new Error(`list returned ${items} items, want ${N}`);
      await new Promise((r) => setTimeout(r, 500));
      const m = rssMiB(A.child.pid);
      const mb = (m.rss * 1024 * 1024) / 1e6;
      const heap = await heapOf(server, sAgent);
      rows.push({ metric: `server RSS, ${N} GitTargets cached`, unit: 'MB', server: mb, target: '≤ 300 MB', met: mb <= 300, note: `peak so far ${fmt((m.hwm * 1048576) / 1e6, 0)} MB; ${heap}` });
      log(`RSS after fill + list: ${fmt(mb, 1)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 1)} MB); ${heap}`);
    }

    // ---- GET by name ---------------------------------------------------------------------
    if (want('get')) {
      const rnd = () => name(Math.floor(Math.random() * N));
      const sGet = (ms: number) => () => runLoad(server, sAgent, { durationMs: ms, concurrency: CONCURRENCY, expect: 200, next: () => ({ method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${rnd()}` }) }).then((r) => check(r, 'server GET'));
      const fGet = (ms: number) => () => runLoad(floor, fAgent, { durationMs: ms, concurrency: CONCURRENCY, expect: 200, next: () => ({ method: 'GET', path: `/floor/obj/${NS}/${rnd()}` }) }).then((r) => check(r, 'floor GET'));
      await sGet(P.warmMs)();
      await fGet(P.warmMs)();
      const r = await interleaved(P.rounds, sGet(P.getMs), fGet(P.getMs));
      const s = median(r.a.map((x) => x.rps));
      const f = median(r.b.map((x) => x.rps));
      const p99s = median(r.a.map((x) => quantile(x.lat, 0.99)));
      const p99f = median(r.b.map((x) => quantile(x.lat, 0.99)));
      rows.push({ metric: 'GET by name', unit: 'req/s', server: s, floor: f, ratio: s / f, target: '≥ 50% of floor', met: s / f >= 0.5, note: `p99 ${fmt(p99s)} ms vs ${fmt(p99f)} ms; runs ${r.a.map((x) => fmt(x.rps, 0)).join('/')} vs ${r.b.map((x) => fmt(x.rps, 0)).join('/')}` });
      log(`server RSS ${fmt((rssMiB(A.child.pid).rss * 1048576) / 1e6, 0)} MB, peak ${fmt((rssMiB(A.child.pid).hwm * 1048576) / 1e6, 0)} MB`);
      log(`GET: server ${fmt(s, 0)}/s, floor ${fmt(f, 0)}/s, ratio ${fmt((100 * s) / f, 0)}%`);
    }

    // ---- LIST ----------------------------------------------------------------------------
    if (want('list')) {
      const sList = async () => {
        const t0 = performance.now();
        const r = await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets` });
        if (r.status !== 200) throw new Error(`server LIST: HTTP ${r.status}`);
        return performance.now() - t0;
      };
      const fList = async () => {
        const t0 = performance.now();
        const r = await request(floor, fAgent, { method: 'GET', path: '/floor/list' });
        if (r.status !== 200) throw new Error(`floor LIST: HTTP ${r.status}`);
        return performance.now() - t0;
      };
      const fr = JSON.parse((await request(floor, fAgent, { method: 'GET', path: '/floor/list' })).body) as { items: unknown[] };
      if (fr.items.length !== N) throw new Error(`floor list returned ${fr.items.length} items`);
      for (const f of [sList, fList]) await timedLoop(P.warmMs, f);
      const r = await interleaved(P.rounds, () => timedLoop(P.listMs, sList).then(median), () => timedLoop(P.listMs, fList).then(median));
      const s = median(r.a);
      const f = median(r.b);
      rows.push({ metric: `LIST ${N}, unpaginated`, unit: 'ms/list', server: s, floor: f, ratio: s / f, target: '≤ 3× floor', met: s / f <= 3, note: `runs ${r.a.map((x) => fmt(x, 0)).join('/')} vs ${r.b.map((x) => fmt(x, 0)).join('/')}` });
      log(`LIST: server ${fmt(s)} ms, floor ${fmt(f)} ms, ratio ${fmt(s / f, 2)}×`);

      // The same LIST with Accept-Encoding: gzip (compressed over 128 KiB, level 1, as kube-apiserver),
      // interleaved with the identity LIST: time on loopback and bytes on the wire.
      const listPath = `${GROUP_PATH}/namespaces/${NS}/gittargets`;
      const sGzip = async () => {
        const t0 = performance.now();
        const r = await request(server, sAgent, { method: 'GET', path: listPath, headers: { 'accept-encoding': 'gzip' } });
        if (r.status !== 200) throw new Error(`server LIST gzip: HTTP ${r.status}`);
        return performance.now() - t0;
      };
      const gzBytes = (await request(server, sAgent, { method: 'GET', path: listPath, headers: { 'accept-encoding': 'gzip' } })).bytes;
      const idBytes = (await request(server, sAgent, { method: 'GET', path: listPath })).bytes;
      await timedLoop(P.warmMs, sGzip);
      const rg = await interleaved(P.rounds, () => timedLoop(P.listMs, sGzip).then(median), () => timedLoop(P.listMs, sList).then(median));
      const g = median(rg.a);
      const id = median(rg.b);
      rows.push({ metric: `LIST ${N}, unpaginated, gzip (server vs itself without gzip)`, unit: 'ms/list', server: g, floor: id, ratio: g / id, target: 'measured (no target)', note: `${fmt(gzBytes / 1e6, 2)} MB vs ${fmt(idBytes / 1e6, 2)} MB on the wire; runs ${rg.a.map((x) => fmt(x, 0)).join('/')} vs ${rg.b.map((x) => fmt(x, 0)).join('/')}` });
      log(`LIST gzip: ${fmt(g)} ms (${fmt(gzBytes / 1e6, 2)} MB) vs identity ${fmt(id)} ms (${fmt(idBytes / 1e6, 2)} MB)`);

      const sPath = `${GROUP_PATH}/namespaces/${NS}/gittargets?limit=500`;
      const sPaged = async () => traverse(server, sAgent, sPath, (c) => `${sPath}&continue=${encodeURIComponent(c)}`);
      const fPaged = async () => traverse(floor, fAgent, '/floor/list?limit=500', (c) => `/floor/list?limit=500&continue=${c}`);
      const [, sp] = await sPaged();
      const [, fp] = await fPaged();
      for (const f of [sPaged, fPaged]) await timedLoop(P.warmMs, () => f().then((x) => x[0]));
      const rp = await interleaved(
        P.rounds,
        () => timedLoop(P.listMs, () => sPaged().then((x) => x[0])).then(median),
        () => timedLoop(P.listMs, () => fPaged().then((x) => x[0])).then(median),
      );
      const sm = median(rp.a);
      const fm = median(rp.b);
      rows.push({ metric: `LIST ${N}, pages of 500 (all pages)`, unit: 'ms/list', server: sm, floor: fm, ratio: sm / fm, target: 'measured (no target)', note: `${sp} vs ${fp} pages` });
      log(`server RSS ${fmt((rssMiB(A.child.pid).rss * 1048576) / 1e6, 0)} MB, peak ${fmt((rssMiB(A.child.pid).hwm * 1048576) / 1e6, 0)} MB`);
      log(`LIST paged: server ${fmt(sm)} ms (${sp} pages), floor ${fmt(fm)} ms (${fp} pages), ratio ${fmt(sm / fm, 2)}×`);
    }

    // ---- RSS of a freshly started server that loads the 10,000 from Redis ----------------------
    if (want('rss')) {
      const C = await startServer(join(tmp, 'data-fresh'), certDir, redis.url, ['--authorization-mode=AlwaysAllow']);
      const c: Target = { host: '127.0.0.1', port: C.port, tls: adminTLS };
      const cAgent = agentFor(c, 1);
      const l = await request(c, cAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets` });
      const items = (JSON.parse(l.body) as { items: unknown[] }).items.length;
      if (items !== N) throw new Error(`fresh server listed ${items} items, want ${N}`);
      await new Promise((r) => setTimeout(r, 500));
      const m = rssMiB(C.child.pid);
      const mb = (m.rss * 1048576) / 1e6;
      const heap = await heapOf(c, cAgent);
      rows.push({ metric: `server RSS, fresh process, ${N} GitTargets loaded from Redis`, unit: 'MB', server: mb, target: '≤ 300 MB', met: mb <= 300, note: `peak ${fmt((m.hwm * 1048576) / 1e6, 0)} MB; ${heap}` });
      log(`fresh server RSS after one LIST: ${fmt(mb, 1)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 1)} MB); ${heap}`);
      cAgent.destroy();
      await C.child.stop();
    }

    // ---- CREATE --------------------------------------------------------------------------
    if (want('create')) {
      let round = 0;
      const sCreate = (ms: number) => () => {
        const r0 = round++;
        return runLoad(server, sAgent, { durationMs: ms, concurrency: CONCURRENCY, expect: 201, next: (i) => ({ method: 'POST', path: `${GROUP_PATH}/namespaces/bench-create/gittargets`, body: gitTarget(`c${r0}-${i}`, i) }) }).then((r) => check(r, 'server CREATE'));
      };
      const fCreate = (ms: number) => () => {
        const r0 = round++;
        return runLoad(floor, fAgent, { durationMs: ms, concurrency: CONCURRENCY, expect: 201, next: (i) => ({ method: 'POST', path: '/floor/create/bench-create', body: gitTarget(`c${r0}-${i}`, i) }) }).then((r) => check(r, 'floor CREATE'));
      };
      await sCreate(P.warmMs)();
      await fCreate(P.warmMs)();
      const r = await interleaved(P.rounds, sCreate(P.createMs), fCreate(P.createMs));
      const s = median(r.a.map((x) => x.rps));
      const f = median(r.b.map((x) => x.rps));
      const p99s = median(r.a.map((x) => quantile(x.lat, 0.99)));
      const p99f = median(r.b.map((x) => quantile(x.lat, 0.99)));
      rows.push({ metric: 'CREATE', unit: 'req/s', server: s, floor: f, ratio: s / f, target: '≥ 30% of floor', met: s / f >= 0.3, note: `p99 ${fmt(p99s)} ms vs ${fmt(p99f)} ms; runs ${r.a.map((x) => fmt(x.rps, 0)).join('/')} vs ${r.b.map((x) => fmt(x.rps, 0)).join('/')}` });
      log(`server RSS ${fmt((rssMiB(A.child.pid).rss * 1048576) / 1e6, 0)} MB, peak ${fmt((rssMiB(A.child.pid).hwm * 1048576) / 1e6, 0)} MB`);
      log(`CREATE: server ${fmt(s, 0)}/s, floor ${fmt(f, 0)}/s, ratio ${fmt((100 * s) / f, 0)}%`);
    }

    // ---- watch fan-out -------------------------------------------------------------------
    if (want('watch')) {
      const list1 = JSON.parse((await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets?limit=1` })).body) as { metadata: { resourceVersion: string } };
      const base = JSON.parse(one.body) as { metadata: { labels?: Record<string, string> } };
      for (const protocol of ['h2', 'h1'] as const) {
        const results: Record<'server' | 'floor', FanoutResult> = {} as never;
        for (const side of ['server', 'floor'] as const) {
          const rv = side === 'server' ? (JSON.parse((await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets?limit=1` })).body) as typeof list1).metadata.resourceVersion : '';
          const res = await fanout(side === 'server' ? server : floor, {
            n: WATCHERS,
            protocol,
            watchPath: side === 'server' ? `${GROUP_PATH}/namespaces/${NS}/gittargets?watch=true&resourceVersion=${rv}&timeoutSeconds=900` : '/floor/watch',
            settleMs: 1000,
            gapMs: 100,
            events: P.events,
            write: (e): Req =>
              side === 'server'
                ? { method: 'PATCH', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${name(0)}`, contentType: 'application/merge-patch+json', body: JSON.stringify({ metadata: { labels: { seq: `${protocol}-${e}` } } }) }
                : { method: 'PUT', path: `/floor/obj/${NS}/${name(0)}`, body: JSON.stringify({ ...base, metadata: { ...base.metadata, labels: { ...base.metadata.labels, seq: `${protocol}-${e}` } } }) },
          });
          results[side] = res;
          log(`watch fan-out ${protocol} ${side}: opened ${res.watchers} in ${fmt(res.openSeconds, 1)} s; p50 ${fmt(quantile(res.lat, 0.5))} ms, p99 ${fmt(quantile(res.lat, 0.99))} ms, max ${fmt(Math.max(...res.lat))} ms, missing ${res.missing}`);
        }
        const s = quantile(results.server.lat, 0.99);
        const f = quantile(results.floor.lat, 0.99);
        rows.push({
          metric: `watch fan-out p99, ${WATCHERS} watchers (${protocol === 'h2' ? 'HTTP/2, 100 streams/conn' : 'HTTP/1.1, 1 conn each'})`,
          unit: 'ms',
          server: s,
          floor: f,
          ratio: s / f,
          target: '≤ 100 ms',
          met: s <= 100 && results.server.missing === 0,
          note: `first watcher ${fmt(Math.min(...results.server.lat))} vs ${fmt(Math.min(...results.floor.lat))} ms, p50 ${fmt(quantile(results.server.lat, 0.5))} vs ${fmt(quantile(results.floor.lat, 0.5))} ms; ${P.events} events; missing ${results.server.missing}`,
        });
      }
      const m = rssMiB(A.child.pid);
      log(`server after watch runs: ${await heapOf(server, sAgent)}`);
      log(`server RSS after watch runs: ${fmt((m.rss * 1048576) / 1e6, 0)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 0)} MB)`);
    }

    // ---- Delegated authorization, warm cache, vs AlwaysAllow (same user) ----------------------
    if (want('delegated')) {
      fake = await startFakeHostingCluster();
      fake.onSAR = () => ({ allowed: true });
      const ca = { certPem: pem('ca.crt'), keyPem: pem('ca.key') };
      const user = issueCertificate(ca, { commonName: 'bench-user', organizations: ['bench-group'], usage: 'client' });
      const B = await startServer(join(tmp, 'data-delegated'), certDir, redis.url, [
        '--authorization-mode=Delegated',
        '--kubeconfig', fake.kubeconfigPath,
        '--authentication-skip-lookup=true',
        '--authorization-webhook-cache-authorized-ttl=5m',
      ]);
      // A fresh AlwaysAllow server beside it, so both sides have the same history (A has been
      // through CREATE and 2,000 watches by now).
      const A2 = await startServer(join(tmp, 'data-allow'), certDir, redis.url, ['--authorization-mode=AlwaysAllow']);
      const userTLS = { ca: adminTLS.ca, cert: user.certPem, key: user.keyPem };
      const allow: Target = { host: '127.0.0.1', port: A2.port, tls: userTLS };
      const deleg: Target = { host: '127.0.0.1', port: B.port, tls: userTLS };
      const aAgent = agentFor(allow, CONCURRENCY);
      const dAgent = agentFor(deleg, CONCURRENCY);
      // 5,000 distinct names: every decision fits the authorizer's cache (10,000 entries) and stays
      // in it for the whole measurement (allowed TTL 5m); warmed below by one GET of each name.
      const HOT = 5_000;
      const rnd = () => name(Math.floor(Math.random() * HOT));
      const get = (t: Target, ag: https.Agent, ms: number) => () =>
        runLoad(t, ag, { durationMs: ms, concurrency: CONCURRENCY, expect: 200, next: () => ({ method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${rnd()}` }) }).then((r) => check(r, 'GET as bench-user'));
      check(await runLoad(allow, aAgent, { durationMs: Infinity, maxRequests: HOT, concurrency: CONCURRENCY, expect: 200, next: (i) => ({ method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${name(i)}` }) }), 'warm AlwaysAllow');
      check(await runLoad(deleg, dAgent, { durationMs: Infinity, maxRequests: HOT, concurrency: CONCURRENCY, expect: 200, next: (i) => ({ method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets/${name(i)}` }) }), 'warm Delegated cache');
      await get(deleg, dAgent, P.warmMs)();
      await get(allow, aAgent, P.warmMs)();
      const sars0 = fake.sars().length;
      const r = await interleaved(P.rounds, get(deleg, dAgent, P.getMs), get(allow, aAgent, P.getMs));
      const sars = fake.sars().length - sars0;
      const d = median(r.a.map((x) => x.rps));
      const a = median(r.b.map((x) => x.rps));
      rows.push({ metric: 'GET by name, Delegated (warm cache) vs AlwaysAllow', unit: 'req/s', server: d, floor: a, ratio: d / a, target: '≥ 90% of AlwaysAllow', met: d / a >= 0.9, note: `user bench-user (not system:masters); ${sars} SubjectAccessReviews during measurement; runs ${r.a.map((x) => fmt(x.rps, 0)).join('/')} vs ${r.b.map((x) => fmt(x.rps, 0)).join('/')}` });
      log(`Delegated GET ${fmt(d, 0)}/s vs AlwaysAllow ${fmt(a, 0)}/s (${fmt((100 * d) / a, 0)}%), ${sars} SARs during measurement`);
      aAgent.destroy();
      dAgent.destroy();
    }
    sAgent.destroy();
    fAgent.destroy();
    report((Date.now() - started) / 1000);
  } finally {
    await cleanup([tmp]);
    await fake?.close();
  }
}

function report(seconds: number): void {
  const head = ['metric', 'server', 'floor', 'ratio', 'target', 'result'];
  const lines = rows.map((r) => [
    `${r.metric} (${r.unit})`,
    fmt(r.server, r.unit === 'req/s' || r.unit === 'MB' ? 0 : 1),
    r.floor === undefined ? '—' : fmt(r.floor, r.unit === 'req/s' ? 0 : 1),
    r.ratio === undefined ? '—' : r.unit === 'req/s' ? `${fmt(100 * r.ratio, 0)}%` : `${fmt(r.ratio, 2)}×`,
    r.target,
    r.met === undefined ? '—' : r.met ? 'MET' : 'MISSED',
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  log('');
  log(head.map((h, i) => h.padEnd(w[i]!)).join('  '));
  for (const l of lines) log(l.map((c, i) => c.padEnd(w[i]!)).join('  '));
  log('');
  log('Markdown (for docs/benchmarks.md):');
  log('| metric | server | floor | ratio | target | result | notes |');
  log('|---|---:|---:|---:|---|---|---|');
  rows.forEach((r, i) => log(`| ${lines[i]!.join(' | ')} | ${r.note ?? ''} |`));
  log(`\nwhole run: ${fmt(seconds, 0)} s`);
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
