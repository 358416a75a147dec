// The LIST memory and compression benchmark (`npm run bench -- list-memory [--quick]
// [--storage=embedded,redis] [--objects=N] [--only=rss,gzip]`).
//
// For each store it starts a real server (and a real redis-server for the Redis store), fills
// 10,000 GitTargets, reads the collection once (every object's JSON is then cached, as in a warm
// server), lets the process settle, and then:
//   rss:  resets the kernel's peak-RSS mark (/proc/<pid>/clear_refs, "5") and sends 4 unpaginated
//         LISTs of the 10,000 at once, each client reading as fast as it can; the server's VmHWM
//         after they finished is the peak. Repeated per round, without and with Accept-Encoding: gzip.
//         Target (docs/benchmarks.md, LIST memory): under 350 MB.
//   gzip: one unpaginated LIST at a time, with and without Accept-Encoding: gzip, interleaved
//         (A/B, B/A, ...): milliseconds per LIST on loopback and bytes on the wire (item 4).
// Figures go to bench/results/ (bench/common/results.ts) and the console.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanup, freePort, startChild, startRedis, tempDir, type Child } from '../common/proc.js';
import { agentFor, fmt, runLoad, type Target } from '../common/load.js';
import { beginRun, spread, baselineSpread } from '../common/results.js';

const argv = process.argv.slice(2);
const arg = (k: string) => argv.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
const quick = argv.includes('--quick');
const stores = (arg('storage') ?? 'embedded,redis').split(',');
const only = arg('only')?.split(',');
const want = (s: string) => !only || only.includes(s);
const N = Number(arg('objects') ?? 10_000);
const CONCURRENT = 4;
const ROUNDS = quick ? 3 : 5;
const TARGET_MB = 350;

const GROUP_PATH = '/apis/configbutler.ai/v1alpha1';
const NS = 'bench';
const LIST_PATH = `${GROUP_PATH}/namespaces/${NS}/gittargets`;
const MAIN = join(fileURLToPath(new URL('.', import.meta.url)), '../../src/cli/main.js');
const log = (s: string) => process.stdout.write(`${s}\n`);
const MB = (kib: number) => (kib * 1024) / 1e6;

// The GitTarget of bench/api (about 1.1 KB of JSON each), so the figures compare.
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
      suspend: true,
    },
  });
}

/** VmRSS and VmHWM of a process, in KiB. */
function memKiB(pid: number): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Resets the peak-RSS mark (Linux ≥ 4.0); false when the kernel refuses. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return memKiB(pid).hwm <= memKiB(pid).rss + 1024;
  } catch {
    return false;
  }
}

/** One GET whose body is counted and dropped as it arrives; resolves with [status, bytes, ms]. */
function fetchCounting(t: Target, agent: https.Agent, path: string, headers: Record<string, string>): Promise<[number, number, number]> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const q = https.request({ host: t.host, port: t.port, method: 'GET', path, agent, headers: { accept: 'application/json', ...headers } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve([res.statusCode ?? 0, bytes, performance.now() - t0]));
      res.on('error', reject);
    });
    q.setTimeout(120_000, () => q.destroy(new Error(`GET ${path}: no answer within 120 s`)));
    q.on('error', reject);
    q.end();
  });
}

async function startServer(store: string, dir: string, redisUrl: string | undefined): Promise<{ child: Child; target: Target }> {
  const port = await freePort();
  const certDir = join(dir, 'certs');
  const args = [MAIN, 'serve', `--storage=${store}`, ...(redisUrl ? ['--redis-url', redisUrl] : []), '--data-dir', join(dir, 'data'), '--cert-dir', certDir, '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--controllers=none', '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0'];
  const child = await startChild(`reverser server (${store})`, process.execPath, args, /"msg":"serving"/, 60_000);
  const pem = (f: string) => readFileSync(join(certDir, f), 'utf8');
  return { child, target: { host: '127.0.0.1', port, tls: { ca: pem('ca.crt'), cert: pem('admin.crt'), key: pem('admin.key') } } };
}

async function benchStore(store: string, tmp: string): Promise<void> {
  const dir = join(tmp, store);
  mkdirSync(dir, { recursive: true });
  let redisUrl: string | undefined;
  if (store === 'redis') {
    mkdirSync(join(dir, 'redis'));
    redisUrl = (await startRedis(join(dir, 'redis'))).url;
  }
  const { child, target } = await startServer(store, dir, redisUrl);
  const fillAgent = agentFor(target, 16);
  const fill = await runLoad(target, fillAgent, {
    durationMs: Infinity,
    maxRequests: N,
    concurrency: 16,
    expect: 201,
    next: (i) => ({ method: 'POST', path: `${GROUP_PATH}/namespaces/${NS}/gittargets`, body: gitTarget(name(i), i) }),
  });
  if (fill.errors) throw new Error(`fill (${store}): ${fill.errors} errors; first: ${fill.firstError}`);
  fillAgent.destroy();
  // Each LIST client has its own connection, as separate kubectl processes would.
  const agents = Array.from({ length: CONCURRENT }, () => agentFor(target, 1));
  const [st, identityBytes] = await fetchCounting(target, agents[0]!, LIST_PATH, {});
  if (st !== 200) throw new Error(`LIST (${store}): HTTP ${st}`);
  await new Promise((r) => setTimeout(r, 2000));
  const settled = memKiB(child.pid).rss;
  log(`${store}: filled ${N} GitTargets in ${fmt(fill.seconds, 1)} s; a LIST is ${fmt(identityBytes / 1e6, 2)} MB; server RSS settled at ${fmt(MB(settled), 0)} MB (pid ${child.pid})`);

  if (want('rss')) {
    const run = beginRun({
      bench: 'list-memory',
      scenario: `list-memory.rss-${store}`,
      title: `Peak RSS of the server while ${CONCURRENT} unpaginated LISTs of ${N} run at once (${store} store)`,
      columns: { value: 'peak RSS', baseline: 'RSS before' },
      order: store === 'embedded' ? 1 : 2,
      params: { objects: N, concurrent: CONCURRENT, rounds: ROUNDS, store, listBytes: identityBytes, protocol: 'HTTP/1.1, one connection per client' },
    });
    for (const gzip of [false, true]) {
      const peaks: number[] = [];
      const before: number[] = [];
      let exact = true;
      for (let r = 0; r < ROUNDS; r++) {
        await new Promise((res) => setTimeout(res, 500));
        before.push(MB(memKiB(child.pid).rss));
        exact = resetPeak(child.pid) && exact;
        let sampled = 0;
        const sampler = setInterval(() => (sampled = Math.max(sampled, memKiB(child.pid).rss)), 10);
        const results = await Promise.all(agents.map((a) => fetchCounting(target, a, LIST_PATH, gzip ? { 'accept-encoding': 'gzip' } : {})));
        clearInterval(sampler);
        for (const [s, b] of results) {
          if (s !== 200) throw new Error(`concurrent LIST (${store}): HTTP ${s}`);
          if (!gzip && b !== identityBytes) throw new Error(`concurrent LIST (${store}): ${b} bytes, want ${identityBytes}`);
        }
        const m = memKiB(child.pid);
        peaks.push(MB(exact ? m.hwm : Math.max(sampled, m.rss)));
      }
      const label = gzip ? 'gzip' : 'identity';
      run.samples(`peak RSS MB, ${label}`, peaks);
      run.samples(`RSS before MB, ${label}`, before);
      const s = spread(peaks);
      run.row({
        metric: `peak RSS, ${CONCURRENT} concurrent unpaginated LISTs of ${N.toLocaleString('en-US')}, ${label} (${store})`,
        unit: 'MB',
        ...s,
        ...baselineSpread(before),
        target: `< ${TARGET_MB} MB`,
        met: s.value < TARGET_MB,
        notes: exact ? 'kernel peak (VmHWM) reset before each round' : 'VmHWM could not be reset: sampled VmRSS every 10 ms',
      });
      log(`${store}: peak RSS with ${CONCURRENT} concurrent ${label} LISTs: ${peaks.map((p) => fmt(p, 0)).join('/')} MB (before: ${before.map((p) => fmt(p, 0)).join('/')} MB)`);
    }
    run.write();
  }

  if (want('gzip')) {
    const run = beginRun({
      bench: 'list-memory',
      scenario: `list-memory.gzip-${store}`,
      title: `Unpaginated LIST of ${N} with and without Accept-Encoding: gzip (${store} store)`,
      columns: { value: 'gzip', baseline: 'identity' },
      order: store === 'embedded' ? 3 : 4,
      params: { objects: N, rounds: ROUNDS * 2, store, protocol: 'HTTP/1.1, keep-alive, one request at a time' },
    });
    const a = agents[0]!;
    const one = async (gzip: boolean) => {
      const [s, bytes, ms] = await fetchCounting(target, a, LIST_PATH, gzip ? { 'accept-encoding': 'gzip' } : {});
      if (s !== 200) throw new Error(`LIST (${store}): HTTP ${s}`);
      return { bytes, ms };
    };
    for (let i = 0; i < 3; i++) {
      await one(true);
      await one(false);
    }
    const gz: Array<{ bytes: number; ms: number }> = [];
    const id: Array<{ bytes: number; ms: number }> = [];
    for (let r = 0; r < ROUNDS * 2; r++) {
      if (r % 2 === 0) {
        gz.push(await one(true));
        id.push(await one(false));
      } else {
        id.push(await one(false));
        gz.push(await one(true));
      }
    }
    run.samples('gzip ms/list', gz.map((x) => x.ms));
    run.samples('identity ms/list', id.map((x) => x.ms));
    const g = spread(gz.map((x) => x.ms));
    const i0 = spread(id.map((x) => x.ms));
    run.row({ metric: `LIST ${N.toLocaleString('en-US')}, unpaginated, time (${store})`, unit: 'ms/list', ...g, ...baselineSpread(id.map((x) => x.ms)), ratio: g.value / i0.value, ratioStyle: 'times', notes: 'loopback: compression costs CPU and saves nothing on the wire time here' });
    const gzMB = gz[0]!.bytes / 1e6;
    const idMB = id[0]!.bytes / 1e6;
    run.row({ metric: `LIST ${N.toLocaleString('en-US')}, unpaginated, bytes on the wire (${store})`, unit: 'MB', value: gzMB, baseline: idMB, ratio: gzMB / idMB, ratioStyle: 'percent', digits: 2 });
    run.write();
    log(`${store}: LIST gzip ${fmt(g.value)} ms (${fmt(gzMB, 2)} MB) vs identity ${fmt(i0.value)} ms (${fmt(idMB, 2)} MB)`);
  }
  for (const a of agents) a.destroy();
  await child.stop();
}

async function main(): Promise<void> {
  const tmp = tempDir('reverser-bench-list-');
  const onSignal = () => void cleanup([tmp]).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log(`LIST memory benchmark: ${N} objects, ${CONCURRENT} concurrent LISTs, ${ROUNDS} rounds, stores ${stores.join(', ')}`);
    for (const store of stores) await benchStore(store, tmp);
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
