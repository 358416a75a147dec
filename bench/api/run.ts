// The API benchmark (`npm run bench -- api [--quick] [--only=rss,get,list,create,watch,idle] [--no-pin]`).
// Starts a real redis-server, the reverser server (Redis storage, HTTPS, dev PKI) and the floor
// (bench/api/floor.ts: bare fastify over the same TLS doing the raw Redis operation), fills 10,000
// GitTargets, then measures server and floor interleaved (A/B, B/A, ...) and prints each metric
// with its ratio and target. Each part writes its raw figures to bench/results/ (api.get, api.list,
// api.create, api.watch, api.rss, api.rss-fresh); `npm run bench:report` builds docs/benchmarks.md's
// table from them. Parts: rss, get, list, create, watch, idle. With 2 or more CPUs and taskset, this process (the load generator) runs on the
// last CPU and every server, the floor and redis-server on the others (--no-pin: no pinning).
import { mkdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type https from 'node:https';
import { cleanup, freePort, pinChildren, rssMiB, startChild, startRedis, tempDir, type Child } from '../common/proc.js';
import { agentFor, fmt, median, quantile, request, runLoad, type LoadResult, type Target } from '../common/load.js';
import { benchWatch } from './watch.js';
import { benchIdle } from './idle.js';
import { benchGet } from './get.js';
import { pinLoadGenerator, type Pinning } from '../common/cpu.js';
import { baselineSpread, beginRun, spread, type Run } from '../common/results.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
// --smoke: a few hundred objects and sub-second runs, to check that the bench works (test/bench).
const smoke = argv.includes('--smoke');
// A smoke run's figures are not results: nothing is written unless BENCH_RESULTS_DIR says where.
if (smoke && !process.env.BENCH_RESULTS_DIR) process.env.BENCH_RESULTS ??= 'off';
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',').map((x) => (x === 'delegated' ? 'get' : x));
const storage = argv.find((a) => a.startsWith('--storage='))?.slice(10) ?? 'redis';
const pin = !argv.includes('--no-pin');
const want = (s: string) => !only || only.includes(s);

const N = smoke ? 300 : 10_000;
const NN = N.toLocaleString('en-US');
const WATCHERS = smoke ? 40 : 1_000;
const CONCURRENCY = 16;
const P = smoke
  ? { rounds: 3, getMs: 300, listMs: 200, createMs: 300, warmMs: 100, events: 3, watchRounds: 3 }
  : quick
    ? { rounds: 3, getMs: 1500, listMs: 2000, createMs: 1500, warmMs: 500, events: 10, watchRounds: 3 }
    : { rounds: 5, getMs: 3000, listMs: 3000, createMs: 2000, warmMs: 1000, events: 20, watchRounds: 5 };
const PARAMS = { mode: smoke ? 'smoke' : quick ? 'quick' : 'full', objects: N, watchers: WATCHERS, concurrency: CONCURRENCY, storage, ...P };

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

const log = (s: string) => process.stdout.write(`${s}\n`);
let pinning: Pinning | undefined;

/** One record per part of the bench, with the pinning noted. */
function part(scenario: string, title: string, order: number): Run {
  const run = beginRun({ bench: 'api', scenario, title, columns: { value: 'server', baseline: 'floor' }, order, params: PARAMS });
  if (pinning) {
    run.pin('load generator (bench process)', `cpu ${pinning.loadGenerator}`);
    run.pin('servers, floor, redis-server', `cpu ${pinning.systemUnderTest}`);
  }
  return run;
}
const runs = (xs: number[], d = 0) => xs.map((x) => fmt(x, d)).join('/');

/**
 * A reverser server on Redis. Controllers are off unless asked for: the bench measures the API (as
 * the floor has no controllers either); the `idle` part measures what the controllers cost at rest.
 */
async function startServer(dataDir: string, certDir: string, redisUrl: string, extra: string[], controllers = 'none'): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const args = [MAIN, 'serve', `--storage=${storage}`, '--redis-url', redisUrl, '--data-dir', dataDir, '--cert-dir', certDir, '--secure-port', String(port), `--controllers=${controllers}`, '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0', '--max-streams-per-namespace=0', ...extra];
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
  const onSignal = () => {
    void cleanup([tmp]).then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const started = Date.now();
    if (pin) {
      pinning = pinLoadGenerator();
      pinChildren(pinning?.systemUnderTest);
    }
    log(`API benchmark: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), node ${process.version}, ${PARAMS.mode} run, storage=${storage}`);
    log(pinning ? `pinned: load generator (this process) on cpu ${pinning.loadGenerator}; servers, floor and redis-server on cpu ${pinning.systemUnderTest}` : 'not pinned (--no-pin, fewer than 2 CPUs or no taskset)');
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
    const floorChild = await startChild('floor', process.execPath, [FLOOR, JSON.stringify(floorCfg)], /floor listening/);
    const server: Target = { host: '127.0.0.1', port: A.port, tls: adminTLS };
    const floor: Target = { host: '127.0.0.1', port: floorPort, tls: adminTLS };
    const sAgent = agentFor(server, CONCURRENCY);
    const fAgent = agentFor(floor, CONCURRENCY);
    log(`redis pid ${redis.child.pid}, server pid ${A.child.pid} on :${A.port}, floor pid ${floorChild.pid} on :${floorPort}, tmp ${tmp}`);

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

    // ---- RSS with N cached ------------------------------------------------------------------
    if (want('rss')) {
      const run = part('api.rss', 'server RSS after fill', 5);
      const l = await request(server, sAgent, { method: 'GET', path: `${GROUP_PATH}/namespaces/${NS}/gittargets` });
      const items = (JSON.parse(l.body) as { items: unknown[] }).items.length;
      if (items !== N) throw new Error(`list returned ${items} items, want ${N}`);
      await new Promise((r) => setTimeout(r, 500));
      const m = rssMiB(A.child.pid);
      const mb = (m.rss * 1024 * 1024) / 1e6;
      const heap = await heapOf(server, sAgent);
      run.samples('RSS MB, peak RSS MB', [mb, (m.hwm * 1048576) / 1e6]);
      run.row({ metric: `server RSS, ${NN} GitTargets cached (after fill + LIST)`, unit: 'MB', value: mb, target: '≤ 300 MB', met: mb <= 300, digits: 0, notes: `peak so far ${fmt((m.hwm * 1048576) / 1e6, 0)} MB; ${heap}` });
      run.write();
      log(`RSS after fill + list: ${fmt(mb, 1)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 1)} MB); ${heap}`);
    }

    // ---- GET by name, non-admin, per authorizer ------------------------------------------------
    if (want('get')) {
      await benchGet({
        tmp,
        pem,
        redisUrl: redis.url,
        redisPid: redis.child.pid,
        floorPort,
        floorPid: floorChild.pid,
        startServer: (dataDir, extra) => startServer(dataDir, certDir, redis.url, extra),
        objects: N,
        concurrency: CONCURRENCY,
        rounds: P.rounds,
        getMs: P.getMs,
        warmMs: P.warmMs,
        groupPath: GROUP_PATH,
        ns: NS,
        name,
        params: PARAMS,
        pinning,
        log,
      });
    }

    // ---- LIST ----------------------------------------------------------------------------
    if (want('list')) {
      const run = part('api.list', 'LIST', 2);
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
      const s = spread(r.a);
      const f = baselineSpread(r.b);
      run.samples('server ms/list (median of each run)', r.a);
      run.samples('floor ms/list (median of each run)', r.b);
      run.row({ metric: `LIST ${NN}, unpaginated`, unit: 'ms/list', ...s, ...f, ratio: s.value / f.baseline, ratioStyle: 'times', target: '≤ 3× floor', met: s.value / f.baseline <= 3 });
      log(`LIST: server ${fmt(s.value)} ms, floor ${fmt(f.baseline)} ms, ratio ${fmt(s.value / f.baseline, 2)}×; runs ${runs(r.a)} vs ${runs(r.b)}`);

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
      const g = spread(rg.a);
      const id = baselineSpread(rg.b);
      run.samples('server gzip ms/list (median of each run)', rg.a);
      run.samples('server identity ms/list, interleaved with gzip (median of each run)', rg.b);
      run.row({ metric: `LIST ${NN}, unpaginated, gzip (server vs itself without gzip)`, unit: 'ms/list', ...g, ...id, baselineLabel: 'no gzip', ratio: g.value / id.baseline, ratioStyle: 'times', notes: `${fmt(gzBytes / 1e6, 2)} MB vs ${fmt(idBytes / 1e6, 2)} MB on the wire` });
      log(`LIST gzip: ${fmt(g.value)} ms (${fmt(gzBytes / 1e6, 2)} MB) vs identity ${fmt(id.baseline)} ms (${fmt(idBytes / 1e6, 2)} MB)`);

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
      const sm = spread(rp.a);
      const fm = baselineSpread(rp.b);
      run.samples('server ms for all pages of 500 (median of each run)', rp.a);
      run.samples('floor ms for all pages of 500 (median of each run)', rp.b);
      run.row({ metric: `LIST ${NN}, pages of 500 (all pages)`, unit: 'ms/list', ...sm, ...fm, ratio: sm.value / fm.baseline, ratioStyle: 'times', notes: `${sp} vs ${fp} pages` });
      const m = rssMiB(A.child.pid);
      run.note(`server RSS after the LIST runs ${fmt((m.rss * 1048576) / 1e6, 0)} MB, peak so far ${fmt((m.hwm * 1048576) / 1e6, 0)} MB`);
      run.write();
      log(`LIST paged: server ${fmt(sm.value)} ms (${sp} pages), floor ${fmt(fm.baseline)} ms (${fp} pages), ratio ${fmt(sm.value / fm.baseline, 2)}×`);
    }

    // ---- RSS of a freshly started server that loads the N from Redis ---------------------------
    if (want('rss')) {
      const run = part('api.rss-fresh', 'server RSS, fresh process', 6);
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
      run.samples('RSS MB, peak RSS MB', [mb, (m.hwm * 1048576) / 1e6]);
      run.row({ metric: `server RSS, fresh process loading the ${NN} from Redis, one LIST`, unit: 'MB', value: mb, target: '≤ 300 MB', met: mb <= 300, digits: 0, notes: `peak ${fmt((m.hwm * 1048576) / 1e6, 0)} MB; ${heap}` });
      run.write();
      log(`fresh server RSS after one LIST: ${fmt(mb, 1)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 1)} MB); ${heap}`);
      cAgent.destroy();
      await C.child.stop();
    }

    // ---- CREATE --------------------------------------------------------------------------
    if (want('create')) {
      const run = part('api.create', 'CREATE', 3);
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
      const s = spread(r.a.map((x) => x.rps));
      const f = baselineSpread(r.b.map((x) => x.rps));
      const p99s = median(r.a.map((x) => quantile(x.lat, 0.99)));
      const p99f = median(r.b.map((x) => quantile(x.lat, 0.99)));
      run.samples('server req/s', r.a.map((x) => x.rps));
      run.samples('floor req/s', r.b.map((x) => x.rps));
      run.samples('server p99 ms', r.a.map((x) => quantile(x.lat, 0.99)));
      run.samples('floor p99 ms', r.b.map((x) => quantile(x.lat, 0.99)));
      run.row({ metric: 'CREATE (admin user, AlwaysAllow)', unit: 'req/s', ...s, ...f, ratio: s.value / f.baseline, ratioStyle: 'percent', target: '≥ 30% of floor', met: s.value / f.baseline >= 0.3, digits: 0, notes: `p99 ${fmt(p99s)} ms vs ${fmt(p99f)} ms` });
      run.write();
      log(`CREATE: server ${fmt(s.value, 0)}/s, floor ${fmt(f.baseline, 0)}/s, ratio ${fmt((100 * s.value) / f.baseline, 0)}%; runs ${runs(r.a.map((x) => x.rps))} vs ${runs(r.b.map((x) => x.rps))}`);
    }

    // ---- watch fan-out: server and floor interleaved, several rounds per protocol -------------
    if (want('watch')) {
      await benchWatch({ server, floor, serverAgent: sAgent, serverPid: A.child.pid, run: part('api.watch', 'watch fan-out', 4), watchers: WATCHERS, rounds: P.watchRounds, events: P.events, settleMs: smoke ? 200 : 1000, groupPath: GROUP_PATH, ns: NS, name0: name(0), object0: one.body, log });
    }

    // ---- an idle server with its controllers on: background Redis traffic and CPU -------------
    if (want('idle')) {
      await benchIdle({
        run: part('api.idle', 'idle server, controllers on', 7),
        redisUrl: redis.url,
        redisPid: redis.child.pid,
        objectsKey: OBJECTS_KEY,
        settleMs: smoke ? 5_000 : 30_000,
        maxSettleMs: smoke ? 30_000 : 600_000,
        measureMs: smoke ? 2000 : 30_000,
        startServer: () => startServer(join(tmp, 'data-idle'), certDir, redis.url, ['--authorization-mode=AlwaysAllow'], 'all'),
        log,
      });
    }
    sAgent.destroy();
    fAgent.destroy();
    log(`\nwhole run: ${fmt((Date.now() - started) / 1000, 0)} s; figures in bench/results/ (npm run bench:report builds docs/benchmarks.md's table)`);
  } finally {
    await cleanup([tmp]);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
