// The scale benchmark (`npm run bench -- scale [--quick] [--sizes=1000,10000] [--only=startup,tenants,suspended] [--suspended=N] [--edits=N]`):
// 1. scale.startup: a fresh server (Redis store, controllers on, no objects): time from spawn to
//    /readyz 200 and to a served GET, the CPU it burnt until then, and its RSS at rest before any
//    work, as the container image runs it (the Dockerfile's entry, node flags and environment,
//    bench/common/image.ts), as bench/peer runs it: the RSS target is the peer's. Target: ready
//    within 1 s.
// 2. scale.tenants-<N>: N tenants, each a sandbox namespace with its ConfigMaps and one GitTarget on
//    its own `local:` repository (idleSeconds 1): time from the first GitTarget create to all Ready;
//    30 s after Ready, the server's CPU and the Redis commands per second at rest, its descriptors
//    and RSS; then edits spread over the tenants at 50/s, each timed from the PATCH to its pushed
//    commit (status.lastCommit of its GitTarget), and a sample of them checked in Git.
// 3. api.idle (`--only=suspended`): N suspended GitTargets (default 10,000), then a fresh server with
//    its controllers on at rest, measured by bench/api/idle.ts (the API bench's own idle part),
//    after a first server reported them all Suspended (so the measured one is a restart).
// The server is a child process (node dist/src/cli/main.js serve; the start-up part: the image's
// entry) on a real redis-server.
import { execFileSync, spawn } from 'node:child_process';
import type https from 'node:https';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { agentFor, fmt, quantile, request, type Target } from '../common/load.js';
import { cleanup, freePort, rssMiB, startChild, startRedis, tempDir, type Child } from '../common/proc.js';
import { commandDelta, cpuMeter, processCpuMs, redisCommandCalls } from '../common/cpu.js';
import { beginRun, machineFacts, REPO_ROOT, spread } from '../common/results.js';
import { imageEnv, imageMain, imageNodeArgs } from '../common/image.js';
import { createTenantSource, createTenantTarget, describeNotReady, gitTarget, pool, readyCount, retried, tenantNs, GV } from './tenants.js';
import { benchIdle } from '../api/idle.js';
import { watchCommits } from './watch.js';
import { collectCommits, opsPerEdit, stageFigures, storageOps, threadCpuMs, type EditTimes } from './stages.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const SIZES = (opt('sizes') ?? (quick ? '200' : '1000,10000')).split(',').map(Number);
const only = new Set((opt('only') ?? 'startup,tenants').split(','));
const REST_AFTER_READY_MS = quick ? 10_000 : 30_000;
const MEASURE_MS = quick ? 10_000 : 20_000;
const EDITS_PER_SECOND = 50;
/** Keep-alive connections the edits are sent over (bench/scale edit phase). */
const EDIT_CONNECTIONS = 64;
/** Requests in flight while the tenants are created (and keep-alive connections to carry them). */
const SETUP_IN_FLIGHT = 32;
const IDLE_SECONDS = 1;
/** The Ready wait fails when no GitTarget became Ready for this long (the creates are done by then). */
const READY_STALL_MS = 5 * 60_000;
/** ... or when all are not Ready this long after the first create. */
const READY_DEADLINE_MS = 60 * 60_000;
/** An edit not seen as a pushed commit this long after its PATCH fails the bench (with its GitTarget's state). */
const EDIT_DEADLINE_MS = 120_000;
const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * `p`'s value, or undefined after `ms`; the timer is cleared once `p` settles (a bare sleep in a
 * race kept the finished bench alive for the deadline's two minutes).
 */
function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(r, ms, undefined)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
const objectsFor = (n: number) => (n >= 10_000 ? 1 : 5);

function serverArgs(port: number, dataDir: string, certDir: string, redisUrl: string): string[] {
  return [MAIN, 'serve', '--storage=redis', '--redis-url', redisUrl, '--data-dir', dataDir, '--cert-dir', certDir, '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--sandbox', '--log-level=warn', '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0'];
}

/** BENCH_SERVER_ARGS: more flags for the measured server of the tenants part (e.g. `--git-workers=1` for a baseline). */
const extraServerArgs = () => (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);
const nodeArgs = () => (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const tls = (certDir: string) => ({ ca: readFileSync(join(certDir, 'ca.crt'), 'utf8'), cert: readFileSync(join(certDir, 'admin.crt'), 'utf8'), key: readFileSync(join(certDir, 'admin.key'), 'utf8') });

/** V8 heap and external memory from the server's /metrics (prom-client's default metrics), in MiB. */
async function heapOf(t: Target, agent: https.Agent): Promise<string> {
  const r = await request(t, agent, { method: 'GET', path: '/metrics' });
  const v = (m: string) => Number(new RegExp(`^${m} ([0-9.e+]+)`, 'm').exec(r.body)?.[1] ?? NaN) / 2 ** 20;
  return `V8 heap used ${fmt(v('nodejs_heap_size_used_bytes'), 0)} MiB, external ${fmt(v('nodejs_external_memory_bytes'), 0)} MiB`;
}

/** The server's GitTarget status writes so far by HTTP code (apiserver_request_total, verb update: the controllers' status writes count there). */
async function statusWrites(t: Target, agent: https.Agent): Promise<Record<string, number>> {
  const r = await request(t, agent, { method: 'GET', path: '/metrics' });
  const out: Record<string, number> = {};
  for (const m of r.body.matchAll(/^apiserver_request_total\{verb="update",resource="gittargets",code="(\d+)"\} ([0-9.e+]+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/**
 * What Redis holds for a tenant whose edit was not committed: its ConfigMap (the edit stored?) and
 * its GitTarget's window record (the change recorded, staged, in a window, or gone?), read
 * directly, so a failure says which step of the path change → window → commit it stopped at.
 */
async function storedState(redis: Redis, ns: string): Promise<string> {
  const field = `${ns}/mirror`;
  const [cm, rec] = await Promise.all([
    redis.hget('reverser:{c:_}:obj:/configmaps', `${ns}/cm-0`),
    redis.hget('reverser:{c:_}:obj:internal.configbutler.ai/commitwindows', field),
  ]).catch((e: Error) => [`(not read: ${e.message})`, undefined]);
  const value = cm ? /"value":"([^"]*)"/.exec(cm)?.[1] : undefined;
  return `its ConfigMap in Redis: data.value ${JSON.stringify(value)} (resourceVersion ${cm ? /"resourceVersion":"(\d+)"/.exec(cm)?.[1] : '-'}); its window record: ${rec ? rec.slice(0, 4000) : 'none'}`;
}

/**
 * RSS of a fresh server at rest, run as the tenants part runs it (the start-up part measures it
 * with one more round; 160 MiB when it did not run).
 */
let restBaseline = 160;

/** How a server is started: its entry, node flags and environment. */
interface Launch {
  main: string;
  nodeArgs: string[];
  env: Record<string, string>;
}
/** As the container image runs it (bench/common/image.ts): what the start-up part's targets are about. */
const asShipped = (): Launch => ({ main: imageMain(MAIN), nodeArgs: imageNodeArgs(), env: imageEnv() });
/** As the tenants part runs it: the unbundled entry, node's defaults or BENCH_SERVER_NODE_ARGS. */
const asTenants = (): Launch => ({ main: MAIN, nodeArgs: nodeArgs(), env: {} });

/** Spawn → /readyz 200 → a GET served, polled every 10 ms; CPU and RSS then and after 5 s at rest. */
async function startupRound(tmp: string, certDir: string, redisUrl: string, round: number, launch: Launch) {
  const port = await freePort();
  const t0 = performance.now();
  const [, ...args] = serverArgs(port, join(tmp, `data-start-${round}`), certDir, redisUrl);
  const proc = spawn(process.execPath, [...launch.nodeArgs, launch.main, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...launch.env } });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  try {
    const t: Target = { host: '127.0.0.1', port, tls: tls(certDir) };
    const agent = agentFor(t, 1);
    const until = async (path: string) => {
      for (;;) {
        if (performance.now() - t0 > 60_000 || proc.exitCode !== null) throw new Error(`server not answering ${path}: ${err}`);
        const ok = await request(t, agent, { method: 'GET', path }).then((r) => r.status === 200, () => false);
        if (ok) return performance.now() - t0;
        await sleep(10);
      }
    };
    const readyMs = await until('/readyz');
    const getMs = await until(`${GV}/gittargets`);
    const cpuMs = processCpuMs(proc.pid!);
    const rssReady = rssMiB(proc.pid!).rss;
    await sleep(5_000);
    const rssRest = rssMiB(proc.pid!).rss;
    agent.destroy();
    return { readyMs, getMs, cpuMs, rssReady, rssRest };
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r(undefined) : proc.once('exit', r)));
  }
}

async function benchStartup(tmp: string, certDir: string, redisUrl: string, started: { at: number; machine: ReturnType<typeof machineFacts> }) {
  const rounds = quick ? 3 : 5;
  const rs: Awaited<ReturnType<typeof startupRound>>[] = [];
  const shipped = asShipped();
  for (let i = 0; i < rounds; i++) {
    rs.push(await startupRound(tmp, certDir, redisUrl, i, shipped));
    log(`start-up ${i + 1}: /readyz ${fmt(rs[i]!.readyMs, 0)} ms, GET ${fmt(rs[i]!.getMs, 0)} ms, ${fmt(rs[i]!.cpuMs, 0)} CPU-ms, RSS ${fmt(rs[i]!.rssReady, 0)} → ${fmt(rs[i]!.rssRest, 0)} MiB`);
  }
  const run = beginRun({ bench: 'scale', scenario: 'scale.startup', title: 'Start-up of a fresh server (Redis, controllers on, no objects), as the image runs it', order: 1, params: { rounds, quick, main: shipped.main.slice(REPO_ROOT.length), nodeArgs: shipped.nodeArgs, env: shipped.env }, started });
  const s = (k: keyof (typeof rs)[0]) => spread(rs.map((r) => r[k]));
  run.samples('ms to /readyz 200', rs.map((r) => r.readyMs));
  run.samples('ms to a served GET', rs.map((r) => r.getMs));
  run.samples('CPU ms until then', rs.map((r) => r.cpuMs));
  run.samples('RSS MiB at ready, 5 s later', rs.flatMap((r) => [r.rssReady, r.rssRest]));
  const readyMet = s('readyMs').value <= 1000;
  run.row({ metric: 'spawn → /readyz 200', unit: 'ms', ...s('readyMs'), digits: 0, target: '≤ 1,000 ms', met: readyMet });
  run.row({ metric: 'spawn → GET gittargets served', unit: 'ms', ...s('getMs'), digits: 0, target: '≤ 1,000 ms', met: s('getMs').value <= 1000 });
  run.row({ metric: 'CPU until the GET was served', unit: 'ms', ...s('cpuMs'), digits: 0, notes: 'user + system, every thread' });
  run.row({ metric: 'RSS 5 s after ready, nothing done', unit: 'MiB', ...s('rssRest'), digits: 0, target: 'at or below the peer (94 MiB with a 1,000-object mirror)', met: s('rssRest').value <= 94, notes: `the image's entry, node flags and environment (${[...shipped.nodeArgs, ...Object.entries(shipped.env).map(([k, v]) => `${k}=${v}`)].join(' ')})` });
  run.write();
  if (only.has('tenants')) {
    const base = await startupRound(tmp, certDir, redisUrl, rounds, asTenants());
    restBaseline = base.rssRest;
    log(`start-up as the tenants part runs it (${MAIN.slice(REPO_ROOT.length)}, node flags: ${nodeArgs().join(' ') || 'none'}): RSS ${fmt(base.rssReady, 0)} → ${fmt(base.rssRest, 0)} MiB`);
  }
}

async function benchTenants(n: number, tmp: string, certDir: string, redisUrl: string, order: number) {
  const started = { at: Date.now(), machine: machineFacts() };
  const objects = objectsFor(n);
  const redis = new Redis(redisUrl);
  await redis.flushall();
  const port = await freePort();
  const dataDir = join(tmp, `data-${n}`);
  // At info level the server logs each commit's milestones (bench/scale/stages.ts reads them).
  const args = serverArgs(port, dataDir, certDir, redisUrl).map((a) => (a === '--log-level=warn' ? '--log-level=info' : a));
  const child: Child = await startChild('reverser server', process.execPath, [...nodeArgs(), ...args, ...extraServerArgs()], /serving/, 60_000);
  const commitLines = collectCommits(child.proc.stderr!);
  const t: Target = { host: '127.0.0.1', port, tls: tls(certDir) };
  let agent = agentFor(t, SETUP_IN_FLIGHT);
  let stopping = false;
  child.proc.once('exit', (code, sig) => stopping || log(`the server exited (${code ?? sig}) during the run:\n${child.output().slice(-3000)}`));
  try {
    // Namespaces and ConfigMaps first (not timed), then every GitTarget: from the first GitTarget
    // create to all Ready. SETUP_IN_FLIGHT requests at a time over as many keep-alive connections.
    const s0 = performance.now();
    await pool(n, SETUP_IN_FLIGHT, async (i) => createTenantSource(t, agent, i, objects));
    log(`${n} namespaces with ${objects} ConfigMaps each created in ${fmt((performance.now() - s0) / 1000, 1)} s`);
    // What the GitTargets cost until all Ready, whatever the machine's load: the server's CPU
    // (main thread, other threads: the git workers) and Redis commands, per tenant.
    const readyCpu0 = threadCpuMs(child.pid);
    const readyCmds0 = await redisCommandCalls(redis);
    const t0 = performance.now();
    await pool(n, SETUP_IN_FLIGHT, async (i) => createTenantTarget(t, agent, i, IDLE_SECONDS));
    const createdMs = performance.now() - t0;
    log(`${n} GitTargets created in ${fmt(createdMs / 1000, 1)} s (${fmt(n / (createdMs / 1000), 0)}/s)`);
    // A full list of the GitTargets is ~2 KiB per tenant: polled every second up to 1,000 tenants,
    // more rarely above, so the polling itself does not load the server it waits for.
    const pollMs = Math.max(1000, n / 2);
    // Two deadlines: no GitTarget became Ready for READY_STALL_MS (one stuck in a state is named
    // with its conditions, not waited on for an hour), or READY_DEADLINE_MS in all.
    let st = await readyCount(t, agent);
    let progressAt = performance.now();
    let loggedAt = performance.now();
    while (st.ready < n) {
      const now = performance.now();
      if (now - progressAt > READY_STALL_MS) throw new Error(`${st.ready}/${n} Ready, none more for ${READY_STALL_MS / 1000} s; ${st.waiting}`);
      if (now - t0 > READY_DEADLINE_MS) throw new Error(`only ${st.ready}/${n} Ready after ${READY_DEADLINE_MS / 60_000} min; ${st.waiting}`);
      if (now - loggedAt > 60_000) {
        log(`${st.ready}/${n} Ready; ${st.waiting.split('\n')[0]}`);
        loggedAt = now;
      }
      await sleep(pollMs);
      const before = st.ready;
      st = await readyCount(t, agent);
      if (st.ready > before) progressAt = performance.now();
    }
    const readyMs = performance.now() - t0;
    const readyCpu1 = threadCpuMs(child.pid);
    const readyCmds = Object.values(commandDelta(readyCmds0, await redisCommandCalls(redis))).reduce((a, b) => a + b, 0);
    // The polling list of the GitTargets (above) is in these figures too: ~n / 2 ms apart.
    const writes = await statusWrites(t, agent);
    const perTenant = { main: (readyCpu1.main - readyCpu0.main) / n, others: (readyCpu1.others - readyCpu0.others) / n, cmds: readyCmds / n, writes: (writes['200'] ?? 0) / n, conflicts: (writes['409'] ?? 0) / n };
    log(`status writes per tenant: ${fmt(perTenant.writes, 2)} stored, ${fmt(perTenant.conflicts, 2)} conflicts (409, retried); the set-up retried ${retried.unavailable} answers 503`);
    log(`${n} GitTargets Ready ${fmt(readyMs / 1000, 1)} s after the first create; per tenant: server CPU ${fmt(perTenant.main, 1)} ms main thread + ${fmt(perTenant.others, 1)} ms other threads, ${fmt(perTenant.cmds, 1)} Redis commands`);
    // The set-up's connections are closed: the descriptors counted at rest are the server's own
    // (and the one connection the measurement uses), not the load generator's.
    agent.destroy();
    agent = agentFor(t, 16);

    // At rest: wait, then measure.
    await sleep(REST_AFTER_READY_MS);
    const c0 = await redisCommandCalls(redis);
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const meter = cpuMeter({ server: child.pid, redis: redisPid });
    // By thread: every thread of node is named "node" (the git workers and V8's helpers too), so
    // the main thread is told apart by its id (= the pid) and the rest is the process's total
    // minus it (a git worker that ends within the window takes its own counter with it).
    const main0 = threadCpuMs(child.pid).main;
    const tasks0 = readdirSync(`/proc/${child.pid}/task`).length;
    const m0 = performance.now();
    await sleep(MEASURE_MS);
    const cpu = meter.delta();
    const ms = performance.now() - m0;
    const mainMs = threadCpuMs(child.pid).main - main0;
    const tasks1 = readdirSync(`/proc/${child.pid}/task`).length;
    const byThread = `main thread ${fmt((100 * mainMs) / ms, 2)}%, other threads ${fmt((100 * (cpu.server! - mainMs)) / ms, 2)}%; threads ${tasks0} → ${tasks1}`;
    const cmds = commandDelta(c0, await redisCommandCalls(redis));
    const cmdRate = Object.values(cmds).reduce((a, b) => a + b, 0) / (ms / 1000);
    const cpuPct = (100 * cpu.server!) / ms;
    const redisPct = (100 * cpu.redis!) / ms;
    const fd = fds(child.pid);
    const rss = rssMiB(child.pid).rss;
    const heap = await heapOf(t, agent);
    const top = Object.entries(cmds).sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k.toUpperCase()} ${fmt(v / (ms / 1000), 1)}/s`).join(', ') || 'none';
    log(`at rest: server ${fmt(cpuPct, 2)}% of a core (${byThread || 'no thread measurable'}), redis ${fmt(redisPct, 2)}%, ${fmt(cmdRate, 1)} Redis cmd/s (${top}), ${fd} fds, RSS ${fmt(rss, 0)} MiB (${heap})`);

    // Edits spread over the tenants at 50/s, each tenant at most once; PATCH → pushed commit.
    // --edits=0 stops after the at-rest part (a profile of the server at rest ends there).
    const edits = Math.min(n, Number(opt('edits') ?? (quick ? 200 : 1000)));
    if (edits === 0) return;
    const order_ = Array.from({ length: n }, (_, i) => i).sort(() => Math.random() - 0.5).slice(0, edits);
    // The edits have connections of their own, as many editors would: with the 16 of the
    // measurement agent, edits waited in the bench for a free socket whenever answers slowed
    // (at 50/s, 16 sockets are all busy once a PATCH takes 320 ms), and that wait was timed as
    // the server's.
    const editAgent = agentFor(t, EDIT_CONNECTIONS);
    st = await readyCount(t, agent);
    const watch = watchCommits(t, st.rv);
    await sleep(500);
    // What the edits cost, whatever the machine's load: the server's CPU (main thread, other threads) and Redis commands, per edit.
    const editCpu0 = threadCpuMs(child.pid);
    const editCmds0 = await redisCommandCalls(redis);
    const metricsText = async () => (await request(t, agent, { method: 'GET', path: '/metrics' })).body;
    const editOps0 = storageOps(await metricsText());
    const lat: number[] = [];
    const times: EditTimes[] = [];
    let editsRetried = 0;
    const wall = (at: number) => performance.timeOrigin + at;
    const begin = performance.now();
    try {
      await Promise.all(
        order_.map(async (i, k) => {
          const due = begin + (k * 1000) / EDITS_PER_SECOND;
          await sleep(Math.max(0, due - performance.now()));
          const ns = tenantNs(i);
          const sent = performance.now();
          // A 503 acknowledged nothing (or, after a timeout, maybe the same patch): an editor sends
          // it again after the Status's retryAfterSeconds, and the wait counts in the edit's time.
          let r = await request(t, editAgent, { method: 'PATCH', path: `/api/v1/namespaces/${ns}/configmaps/cm-0`, contentType: 'application/merge-patch+json', body: JSON.stringify({ data: { value: `edit-${k}` } }) });
          for (let attempt = 1; r.status === 503 && attempt < 5; attempt++) {
            editsRetried++;
            await sleep(1000 * Number((JSON.parse(r.body) as { details?: { retryAfterSeconds?: number } }).details?.retryAfterSeconds ?? 1));
            r = await request(t, editAgent, { method: 'PATCH', path: `/api/v1/namespaces/${ns}/configmaps/cm-0`, contentType: 'application/merge-patch+json', body: JSON.stringify({ data: { value: `edit-${k}` } }) });
          }
          if (r.status !== 200) throw new Error(`PATCH ${ns}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
          const answered = performance.now();
          const seen = await within(watch.next(ns, st.sha.get(ns) ?? ''), EDIT_DEADLINE_MS);
          if (!seen) {
            const gt = await request(t, agent, { method: 'GET', path: `${GV}/namespaces/${ns}/gittargets/mirror`, deadlineMs: 30_000 }).catch((e: Error) => ({ status: 0, body: e.message }));
            const state = gt.status === 200 ? describeNotReady([JSON.parse(gt.body)], 'GitTarget') : `GET its GitTarget: ${gt.status} ${gt.body.slice(0, 200)}`;
            throw new Error(`${ns}: no pushed commit seen within ${EDIT_DEADLINE_MS / 1000} s of its edit; ${state}\n${await storedState(redis, ns)}`);
          }
          lat.push(seen.at - sent);
          times.push({ ns, sentAt: wall(sent), answeredAt: wall(answered), seenAt: wall(seen.at) });
        }),
      );
    } finally {
      watch.stop();
      editAgent.destroy();
    }
    const editCpu1 = threadCpuMs(child.pid);
    const editCmds = Object.values(commandDelta(editCmds0, await redisCommandCalls(redis))).reduce((a, b) => a + b, 0);
    const perEdit = { main: (editCpu1.main - editCpu0.main) / edits, others: (editCpu1.others - editCpu0.others) / edits, cmds: editCmds / edits };
    const ops = opsPerEdit(editOps0, storageOps(await metricsText()), edits);
    const opsNote = ops.map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ');
    log(`edit phase: storage operations per edit: ${opsNote}`);
    log(`edit phase: server CPU per edit ${fmt(perEdit.main, 1)} ms main thread + ${fmt(perEdit.others, 1)} ms other threads, ${fmt(perEdit.cmds, 1)} Redis commands per edit`);
    // A sample checked in Git: the edit is in the branch of the tenant's own repository.
    const gitRoot = join(dataDir, 'git');
    let checked = 0;
    for (const [k, i] of order_.slice(0, 10).entries()) {
      const ns = tenantNs(i);
      const repo = execFileSync('find', [gitRoot, '-maxdepth', '4', '-type', 'd', '-name', `${ns}.git`], { encoding: 'utf8' }).trim().split('\n')[0]!;
      const file = execFileSync('git', ['--git-dir', repo, 'show', `main:${ns}/configmaps/cm-0.yaml`], { encoding: 'utf8' });
      if (!file.includes(`value: edit-${k}`)) throw new Error(`${ns}: the pushed file lacks edit-${k}:\n${file}`);
      checked++;
    }
    log(`edits: ${edits} at ${EDITS_PER_SECOND}/s, PATCH → pushed commit p50 ${fmt(quantile(lat, 0.5), 0)} ms, p99 ${fmt(quantile(lat, 0.99), 0)} ms; ${checked} checked in git; ${editsRetried} PATCHes answered 503 and sent again`);
    const stages = stageFigures(times, commitLines.forEdit, IDLE_SECONDS * 1000);
    commitLines.stop();
    for (const f of stages.figures) log(`  stage ${f.stage}: p50 ${fmt(f.p50, 0)} ms, p99 ${fmt(f.p99, 0)} ms, max ${fmt(f.max, 0)} ms`);

    const run = beginRun({ bench: 'scale', scenario: `scale.tenants-${n}`, title: `${n.toLocaleString('en-US')} tenants: GitTargets on their own sandbox namespace and local: repository`, order, params: { n, objectsPerTenant: objects, idleSeconds: IDLE_SECONDS, restAfterReadyMs: REST_AFTER_READY_MS, measureMs: MEASURE_MS, edits, editsPerSecond: EDITS_PER_SECOND, editConnections: EDIT_CONNECTIONS, quick, serverArgs: extraServerArgs() }, started });
    run.samples('edit → pushed commit ms', lat);
    run.row({ metric: 'first GitTarget create → all Ready', unit: 's', value: readyMs / 1000, digits: 1, notes: `creating the ${n} GitTargets (after their namespaces and ${objects} ConfigMaps each, not timed; ${SETUP_IN_FLIGHT} requests in flight) took ${fmt(createdMs / 1000, 1)} s of it` });
    run.row({ metric: 'server CPU per tenant until all Ready, main thread', unit: 'ms', value: perTenant.main, digits: 1, notes: `other threads (git workers, libuv, GC) ${fmt(perTenant.others, 1)} ms; from the first GitTarget create to all Ready, /proc per thread; the bench's polling list included` });
    run.row({ metric: 'Redis commands per tenant until all Ready', unit: 'cmds', value: perTenant.cmds, digits: 1, notes: 'INFO commandstats from the first GitTarget create to all Ready' });
    run.row({ metric: 'GitTarget status writes per tenant until all Ready', unit: 'writes', value: perTenant.writes, digits: 2, notes: `${fmt(perTenant.conflicts, 2)} more per tenant failed with 409 Conflict and were retried (apiserver_request_total, verb update); the set-up retried ${retried.unavailable} answers 503` });
    const big = n >= 10_000;
    run.row({ metric: 'server CPU at rest', unit: '% of a core', value: cpuPct, digits: 2, ...(big ? { target: '≤ 2%', met: cpuPct <= 2 } : {}), notes: `${REST_AFTER_READY_MS / 1000} s after all Ready, over ${MEASURE_MS / 1000} s; by thread: ${byThread || 'none measurable'}; redis-server ${fmt(redisPct, 2)}%` });
    run.row({ metric: 'Redis commands at rest', unit: 'cmd/s', value: cmdRate, digits: 1, ...(big ? { target: '≤ 50/s', met: cmdRate <= 50 } : {}), notes: top });
    run.row({ metric: 'file descriptors', unit: 'fds', value: fd, digits: 0, ...(big ? { target: '≤ 200', met: fd <= 200 } : {}) });
    run.row({ metric: 'RSS at rest', unit: 'MiB', value: rss, digits: 0, ...(big ? { target: '≤ 1,536 MiB', met: rss <= 1536 } : {}), notes: `${heap}; ${fmt((rss - restBaseline) / n * 1024, 0)} KiB per tenant above a fresh server's ${fmt(restBaseline, 0)} MiB` });
    const p99 = quantile(lat, 0.99);
    run.row({ metric: `edit → pushed commit, p50 (${edits} edits at ${EDITS_PER_SECOND}/s)`, unit: 'ms', value: quantile(lat, 0.5), digits: 0 });
    run.row({ metric: 'edit → pushed commit, p99', unit: 'ms', value: p99, digits: 0, target: `≤ ${(IDLE_SECONDS + 1) * 1000} ms (idleSeconds + 1 s)`, met: p99 <= (IDLE_SECONDS + 1) * 1000 });
    run.row({ metric: 'server CPU per edit, main thread', unit: 'ms', value: perEdit.main, digits: 1, notes: `other threads (git workers, libuv, GC) ${fmt(perEdit.others, 1)} ms; from the first edit to the last commit seen, /proc per thread` });
    run.row({ metric: 'Redis commands per edit', unit: 'cmds', value: perEdit.cmds, digits: 1, notes: 'INFO commandstats over the edit phase (the at-rest heartbeat included)' });
    run.row({ metric: 'storage operations per edit', unit: 'ops', value: ops.reduce((a, [, v]) => a + v, 0), digits: 1, notes: `reverser_storage_operation_duration_seconds counts over the edit phase: ${opsNote}` });
    for (const f of stages.figures) run.row({ metric: `stage: ${f.stage}, p50 / p99`, unit: 'ms', value: f.p50, digits: 0, notes: `p99 ${fmt(f.p99, 0)} ms, max ${fmt(f.max, 0)} ms; ${f.what} (${stages.matched} of ${edits} edits matched to the server's commit lines)` });
    run.write();
  } catch (e) {
    // A reset connection may be the server dying: say so, with what it printed last (its exit event may come after the reset).
    await sleep(1000);
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) log(`the server exited (${child.proc.exitCode ?? child.proc.signalCode}):\n${child.output().split('\n').filter((l) => !l.includes('"level":"info"')).slice(-40).join('\n')}`);
    throw e;
  } finally {
    stopping = true;
    agent.destroy();
    await child.stop();
    redis.disconnect();
  }
}

/**
 * api.idle re-measured (bench/api/idle.ts, the same code): `n` suspended GitTargets put in Redis by
 * a server without controllers, then a fresh server with its controllers on, at rest.
 */
async function benchSuspended(n: number, tmp: string, certDir: string, redisUrl: string, redisPid: number) {
  const redis = new Redis(redisUrl);
  await redis.flushall();
  redis.disconnect();
  const start = async (name: string, controllers: string) => {
    const port = await freePort();
    const args = serverArgs(port, join(tmp, name), certDir, redisUrl).filter((a) => a !== '--sandbox');
    const child = await startChild('reverser server', process.execPath, [...nodeArgs(), ...args, `--controllers=${controllers}`, '--max-streams-per-namespace=0'], /serving/, 60_000);
    return { child, port };
  };
  const filler = await start('data-fill', 'none');
  const t: Target = { host: '127.0.0.1', port: filler.port, tls: tls(certDir) };
  const agent = agentFor(t, 16);
  const t0 = performance.now();
  await pool(n, 16, async (i) => {
    const body = gitTarget(`bench`, 5);
    const o = { ...body, metadata: { name: `gt-${String(i).padStart(5, '0')}`, namespace: 'bench' }, spec: { ...body.spec, repository: { url: `local:gt-${i}` }, suspend: true } };
    const r = await request(t, agent, { method: 'POST', path: `${GV}/namespaces/bench/gittargets`, body: JSON.stringify(o) });
    if (r.status !== 201) throw new Error(`create suspended GitTarget: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  });
  log(`${n} suspended GitTargets created in ${fmt((performance.now() - t0) / 1000, 1)} s`);
  agent.destroy();
  await filler.child.stop();
  // A first server with controllers reports every GitTarget Suspended (one lease and one status
  // write each, once); the server measured after it is a restart over them, as in production.
  const first = await start('data-first', 'all');
  const ft: Target = { host: '127.0.0.1', port: first.port, tls: tls(certDir) };
  const fagent = agentFor(ft, 1);
  const t1 = performance.now();
  for (;;) {
    const r = await request(ft, fagent, { method: 'GET', path: `${GV}/gittargets` });
    const items = (JSON.parse(r.body) as { items: any[] }).items;
    if (items.filter((o) => o.status?.conditions?.some((c: any) => c.type === 'Ready' && c.reason === 'Suspended')).length === n) break;
    if (performance.now() - t1 > 15 * 60_000) throw new Error('the GitTargets were not all reported Suspended within 15 min');
    await sleep(2000);
  }
  log(`a first server reported all ${n} Suspended in ${fmt((performance.now() - t1) / 1000, 1)} s`);
  fagent.destroy();
  await first.child.stop();
  const run = beginRun({ bench: 'api', scenario: 'api.idle', title: 'idle server, controllers on', order: 7, params: { suspended: n, settleMs: 30_000, maxSettleMs: 600_000, measureMs: 30_000, via: 'npm run bench -- scale --only=suspended' } });
  await benchIdle({ run, redisUrl, redisPid, objectsKey: 'reverser:{c:_}:obj:configbutler.ai/gittargets', settleMs: 30_000, maxSettleMs: 600_000, measureMs: 30_000, startServer: () => start('data-idle', 'all'), log });
}

async function main(): Promise<void> {
  const tmp = tempDir('reverser-bench-scale-');
  const onSignal = () => void cleanup([tmp]).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const started = { at: Date.now(), machine: machineFacts() };
    const redis = await startRedis(tmp);
    const certDir = join(tmp, 'certs');
    // A first start writes the dev PKI (not timed): every timed start finds it.
    const port = await freePort();
    const first = await startChild('reverser server', process.execPath, serverArgs(port, join(tmp, 'data-pki'), certDir, redis.url), /serving/, 60_000);
    await first.stop();
    if (only.has('startup')) await benchStartup(tmp, certDir, redis.url, started);
    if (only.has('tenants')) for (const [k, n] of SIZES.entries()) await benchTenants(n, tmp, certDir, redis.url, 2 + k);
    if (only.has('suspended')) await benchSuspended(Number(opt('suspended') ?? (quick ? 2_000 : 10_000)), tmp, certDir, redis.url, redis.child.pid);
  } finally {
    await cleanup([tmp]);
  }
}

main().catch((e) => {
  log(`scale bench failed: ${(e as Error).stack ?? e}`);
  // The children are stopped (main's finally); edits still timed in flight hold timers only.
  process.exit(1);
});
