// The peer benchmark (`npm run bench -- peer [--quick] [--sizes=1000,10000] [--rest-seconds=30]`):
// our server side by side with the Go operator it replaces (gitops-reverser), for the workload the
// outside run measured that operator on: one GitTarget mirroring N ConfigMaps (1,000 and 10,000)
// of a source cluster into a local repository.
//
// The source is a second process, `reverser-apiserver sandbox` (a small Kubernetes core), reached
// through the server's --kubeconfig as the peer reached its kube-apiserver: the source's objects
// are not in the measured process. The server (Redis store, controllers on, as in production) is
// spawned and timed from spawn to /readyz 200 and to a served GET, with the CPU it burnt until
// then (every thread, /proc); the GitTarget is created and awaited Ready (its snapshot pushed);
// then, after the mirror settles, its CPU at rest over --rest-seconds (ms of CPU per s, every thread's schedstat) and
// its RSS. Then the same server is restarted over the same store and repository, and timed again:
// a restart finds its GitTarget and re-lists the source (the peer's "ready" was of a running
// operator's restart too).
//
// The server runs with the container image's node flags and environment (the Dockerfile's), as
// shipped; BENCH_SERVER_NODE_ARGS='' and BENCH_SERVER_IMAGE_ENV=off measure node's defaults, and
// BENCH_SERVER_ARGS adds server flags for an experiment (e.g. '--replica-lease-ttl=5m').
//
// The peer's figures are not measured here (building and running the Go operator needs its CRDs,
// webhooks and a control plane): they are the outside run's, recorded in PEER below, and each row
// states its ratio against them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentFor, fmt, request, type Target } from '../common/load.js';
import { cleanup, freePort, rssMiB, spawnChild, startChild, startRedis, tempDir, type Child } from '../common/proc.js';
import { processSchedCpuMs, processSchedRuns } from '../common/cpu.js';
import { beginRun, machineFacts, REPO_ROOT } from '../common/results.js';
import { imageEnv, imageMain, imageNodeArgs } from '../common/image.js';
import { pool, GV } from '../scale/tenants.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const SIZES = (opt('sizes') ?? (quick ? '1000' : '1000,10000')).split(',').map(Number);
const REST_MS = Number(opt('rest-seconds') ?? (quick ? 10 : 60)) * 1000;
/**
 * After Ready, before the at-rest measurement. V8 collects a snapshot's garbage in several passes
 * after the allocation stops (its memory reducer, on GC helper threads): 15–45 s after Ready they
 * still showed as 6–15 ms of CPU a second (load ~19), so the steady state is measured a minute later.
 */
const SETTLE_MS = quick ? 5_000 : 60_000;
/** The image's entry (bench/common/image.ts); the source sandbox runs the same entry. */
const MAIN = imageMain(fileURLToPath(new URL('../../src/cli/main.js', import.meta.url)));
const NS = 'peer';
const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** More server flags for an experiment (BENCH_SERVER_ARGS, space-separated), e.g. '--replica-lease-ttl=60s'; none by default. */
function extraServerArgs(): string[] {
  return (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);
}
const tls = (certDir: string) => ({ ca: readFileSync(join(certDir, 'ca.crt'), 'utf8'), cert: readFileSync(join(certDir, 'admin.crt'), 'utf8'), key: readFileSync(join(certDir, 'admin.key'), 'utf8') });

/**
 * The Go operator's figures, as an outside run measured them on a kube-apiserver (the issue that
 * asked for this bench quotes them; README.md's known gaps repeat them): RSS with one GitTarget
 * mirroring 1,000 and 10,000 objects, CPU at rest, time from start to ready.
 */
const PEER = {
  source: 'gitops-reverser (Go operator), measured by an outside run on a kube-apiserver',
  rssMiB: { 1000: 94, 10000: 224 } as Record<number, number>,
  cpuAtRestMsPerS: 0,
  readyMs: 100,
};
/**
 * "Unmeasurable" as the kernel's own accounting shows it to top and ps: /proc/<pid>/stat counts CPU
 * in 10 ms ticks, so over a minute anything under one tick, 10 ms / 60 s = 0.17 ms of CPU a
 * second, reads as nothing. Ours is measured finer (schedstat, ns) and compared with that.
 */
const UNMEASURABLE_MS_PER_S = 10 / 60;

interface Start {
  readyMs: number;
  getMs: number;
  readyCpuMs: number;
  getCpuMs: number;
}

/** Spawns the server and polls /readyz, then a GET of GitTargets, every 10 ms. */
async function spawnTimed(args: string[]): Promise<{ child: Child; start: Start; t: Target }> {
  const t0 = performance.now();
  const child = spawnChild(process.execPath, [...imageNodeArgs(), MAIN, ...args], { env: { ...process.env, ...imageEnv() } });
  const { proc } = child;
  const certDir = args[args.indexOf('--cert-dir') + 1]!;
  const port = Number(args[args.indexOf('--secure-port') + 1]);
  let t: Target | undefined;
  const until = async (path: string) => {
    for (;;) {
      if (performance.now() - t0 > 60_000 || proc.exitCode !== null) throw new Error(`server not answering ${path}:\n${child.output().slice(-3000)}`);
      // The dev PKI is written by the first start; read it once it is there.
      try {
        t ??= { host: '127.0.0.1', port, tls: tls(certDir) };
      } catch {
        await sleep(10);
        continue;
      }
      const agent = agentFor(t, 1);
      const ok = await request(t, agent, { method: 'GET', path }).then((r) => r.status === 200, () => false);
      agent.destroy();
      if (ok) return { ms: performance.now() - t0, cpu: processSchedCpuMs(proc.pid!) };
      await sleep(10);
    }
  };
  try {
    const ready = await until('/readyz');
    const get = await until(`${GV}/namespaces/${NS}/gittargets`);
    return { child, t: t!, start: { readyMs: ready.ms, getMs: get.ms, readyCpuMs: ready.cpu, getCpuMs: get.cpu } };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

async function must(t: Target, agent: ReturnType<typeof agentFor>, method: string, path: string, body: unknown, expect: number[]): Promise<any> {
  const r = await request(t, agent, { method, path, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!expect.includes(r.status)) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return r.body ? JSON.parse(r.body) : undefined;
}

/** A ConfigMap of the size a platform's typically is: a handful of keys, ~600 bytes of data. */
const configMap = (i: number) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: `cm-${String(i).padStart(5, '0')}`, namespace: NS, labels: { app: 'peer', shard: String(i % 10) }, annotations: { 'example.com/owner': 'team-a' } },
  data: { 'app.properties': `name=cm-${i}\nreplicas=3\nlog.level=info\n${'feature.flag=true\n'.repeat(20)}`, mode: 'production', index: String(i) },
});

const gitTarget = {
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'GitTarget',
  metadata: { name: 'mirror', namespace: NS },
  spec: {
    repository: { url: `local:${NS}` },
    branch: 'main',
    path: 'live',
    resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [NS] }],
    commit: { idleSeconds: 1, maxAgeSeconds: 600, mode: 'Auto' },
  },
};

async function waitReady(t: Target, deadlineMs: number): Promise<{ ms: number; sha: string }> {
  const t0 = performance.now();
  const agent = agentFor(t, 1);
  try {
    for (;;) {
      const o = await must(t, agent, 'GET', `${GV}/namespaces/${NS}/gittargets/mirror`, undefined, [200]);
      const ready = o.status?.conditions?.find((c: any) => c.type === 'Ready');
      if (ready?.status === 'True' && o.status?.lastCommit?.sha) return { ms: performance.now() - t0, sha: o.status.lastCommit.sha };
      if (performance.now() - t0 > deadlineMs) throw new Error(`GitTarget not Ready after ${deadlineMs} ms: ${JSON.stringify(o.status)}`);
      await sleep(100);
    }
  } finally {
    agent.destroy();
  }
}

/**
 * CPU of `pid` over `ms` of rest, in ms of CPU per second of wall clock, its wake-ups per minute
 * (the scheduler's runs of all its threads) and the RSS after it.
 */
async function atRest(pid: number, ms: number): Promise<{ cpuMsPerS: number; wakeupsPerMin: number; rss: number }> {
  const c0 = processSchedCpuMs(pid);
  const r0 = processSchedRuns(pid);
  const w0 = performance.now();
  await sleep(ms);
  const cpu = processSchedCpuMs(pid) - c0;
  const minutes = (performance.now() - w0) / 60_000;
  return { cpuMsPerS: cpu / (minutes * 60), wakeupsPerMin: (processSchedRuns(pid) - r0) / minutes, rss: rssMiB(pid).rss };
}

async function benchSize(n: number, tmp: string, redisUrl: string, order: number): Promise<void> {
  const started = { at: Date.now(), machine: machineFacts() };
  // The source: a standalone sandbox with n ConfigMaps in one namespace.
  const srcDir = join(tmp, `source-${n}`);
  const srcPort = await freePort();
  const source = await startChild('source sandbox', process.execPath, [MAIN, 'sandbox', '--secure-port', String(srcPort), '--data-dir', srcDir, '--log-level=warn'], /serving on/, 60_000);
  const src: Target = { host: '127.0.0.1', port: srcPort, tls: tls(join(srcDir, 'certs')) };
  const srcAgent = agentFor(src, 16);
  await must(src, srcAgent, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, [201]);
  const c0 = performance.now();
  await pool(n, 16, async (i) => void (await must(src, srcAgent, 'POST', `/api/v1/namespaces/${NS}/configmaps`, configMap(i), [201])));
  srcAgent.destroy();
  log(`source: ${n} ConfigMaps in ${fmt((performance.now() - c0) / 1000, 1)} s`);

  const dataDir = join(tmp, `data-${n}`);
  const certDir = join(tmp, `certs-${n}`);
  const port = await freePort();
  const args = ['serve', ...extraServerArgs(), '--storage=redis', '--redis-url', redisUrl, '--redis-key-prefix', `peer${n}`, '--data-dir', dataDir, '--cert-dir', certDir, '--secure-port', String(port), '--kubeconfig', join(srcDir, 'sandbox.kubeconfig'), '--authorization-mode=AlwaysAllow', '--authentication-tolerate-lookup-failure=true', '--log-level=warn'];
  // A first start writes the dev PKI (not timed): the timed starts find it, as a deployment's would.
  const pki = await spawnTimed(args);
  await pki.child.stop();

  const first = await spawnTimed(args);
  log(`fresh start: /readyz ${fmt(first.start.readyMs, 0)} ms (${fmt(first.start.readyCpuMs, 0)} CPU-ms), GET ${fmt(first.start.getMs, 0)} ms (${fmt(first.start.getCpuMs, 0)} CPU-ms)`);
  let snapshotMs: number;
  let rest: { cpuMsPerS: number; wakeupsPerMin: number; rss: number };
  let restart: Start;
  let restRestart: { cpuMsPerS: number; wakeupsPerMin: number; rss: number };
  try {
    const agent = agentFor(first.t, 1);
    await must(first.t, agent, 'POST', `${GV}/namespaces/${NS}/gittargets`, gitTarget, [201]);
    agent.destroy();
    const ready = await waitReady(first.t, 10 * 60_000);
    snapshotMs = ready.ms;
    log(`GitTarget Ready (snapshot ${ready.sha.slice(0, 8)} pushed) in ${fmt(snapshotMs / 1000, 1)} s; RSS ${fmt(rssMiB(first.child.pid).rss, 0)} MiB`);
    await sleep(SETTLE_MS);
    rest = await atRest(first.child.pid, REST_MS);
    log(`at rest: ${fmt(rest.cpuMsPerS, 2)} ms CPU/s, ${fmt(rest.wakeupsPerMin, 0)} wake-ups/min, RSS ${fmt(rest.rss, 0)} MiB`);
  } finally {
    await first.child.stop();
  }
  // A restart over the same store and repository: the GitTarget is there, the source re-listed.
  const second = await spawnTimed(args);
  try {
    restart = second.start;
    log(`restart: /readyz ${fmt(restart.readyMs, 0)} ms (${fmt(restart.readyCpuMs, 0)} CPU-ms), GET ${fmt(restart.getMs, 0)} ms (${fmt(restart.getCpuMs, 0)} CPU-ms)`);
    await waitReady(second.t, 10 * 60_000);
    await sleep(SETTLE_MS);
    restRestart = await atRest(second.child.pid, REST_MS);
    log(`restart at rest: ${fmt(restRestart.cpuMsPerS, 2)} ms CPU/s, ${fmt(restRestart.wakeupsPerMin, 0)} wake-ups/min, RSS ${fmt(restRestart.rss, 0)} MiB`);
  } finally {
    await second.child.stop();
    await source.stop();
  }

  const peerRss = PEER.rssMiB[n];
  const run = beginRun({
    bench: 'peer',
    scenario: `peer.mirror-${n}`,
    title: `One GitTarget mirroring ${n.toLocaleString('en-US')} ConfigMaps, against the Go operator's figures`,
    columns: { value: 'ours', baseline: 'Go operator (recorded)' },
    order,
    params: { objects: n, settleMs: SETTLE_MS, restMs: REST_MS, storage: 'redis', main: MAIN.slice(REPO_ROOT.length), source: 'reverser-apiserver sandbox (separate process, --kubeconfig)', peer: PEER, nodeArgs: imageNodeArgs(), env: imageEnv(), quick },
    started,
  });
  run.samples('start ms to /readyz, to GET (fresh, restart)', [first.start.readyMs, first.start.getMs, restart.readyMs, restart.getMs]);
  run.samples('CPU ms to /readyz, to GET (fresh, restart)', [first.start.readyCpuMs, first.start.getCpuMs, restart.readyCpuMs, restart.getCpuMs]);
  run.samples('at rest ms CPU/s (fresh, restart)', [rest.cpuMsPerS, restRestart.cpuMsPerS]);
  run.samples('RSS MiB at rest (fresh, restart)', [rest.rss, restRestart.rss]);
  run.samples('wake-ups a minute at rest, every thread (fresh, restart)', [rest.wakeupsPerMin, restRestart.wakeupsPerMin]);
  const rssAgainstPeer = (rss: number) => (peerRss ? { baseline: peerRss, ratio: rss / peerRss, ratioStyle: 'times' as const, met: rss <= peerRss } : {});
  run.row({ metric: `RSS at rest, the ${n.toLocaleString('en-US')}-object mirror pushed`, unit: 'MiB', value: rest.rss, digits: 0, target: 'at or below the peer', ...rssAgainstPeer(rest.rss), notes: `${SETTLE_MS / 1000 + REST_MS / 1000} s after Ready` });
  run.row({ metric: 'RSS at rest after a restart (re-listed)', unit: 'MiB', value: restRestart.rss, digits: 0, target: 'at or below the peer', ...rssAgainstPeer(restRestart.rss) });
  run.row({ metric: 'CPU at rest', unit: 'ms CPU/s', value: rest.cpuMsPerS, digits: 2, baseline: PEER.cpuAtRestMsPerS, target: `unmeasurable (< ${fmt(UNMEASURABLE_MS_PER_S, 2)} ms/s: one 10 ms tick of /proc/<pid>/stat in 60 s)`, met: rest.cpuMsPerS < UNMEASURABLE_MS_PER_S, notes: `over ${REST_MS / 1000} s, every thread's schedstat (ns), ${fmt(rest.wakeupsPerMin, 0)} wake-ups a minute; after the restart ${fmt(restRestart.cpuMsPerS, 2)} ms/s, ${fmt(restRestart.wakeupsPerMin, 0)} wake-ups` });
  run.row({ metric: 'fresh start → /readyz 200', unit: 'ms', value: first.start.readyMs, digits: 0, baseline: PEER.readyMs, ratio: first.start.readyMs / PEER.readyMs, ratioStyle: 'times', target: '≤ 1,000 ms', met: first.start.readyMs <= 1000, notes: `${fmt(first.start.readyCpuMs, 0)} CPU-ms until then` });
  run.row({ metric: 'fresh start → first GET served', unit: 'ms', value: first.start.getMs, digits: 0, target: '≤ 1,000 ms', met: first.start.getMs <= 1000, notes: `${fmt(first.start.getCpuMs, 0)} CPU-ms until then` });
  run.row({ metric: 'restart with the mirror → /readyz 200', unit: 'ms', value: restart.readyMs, digits: 0, baseline: PEER.readyMs, ratio: restart.readyMs / PEER.readyMs, ratioStyle: 'times', target: '≤ 1,000 ms', met: restart.readyMs <= 1000, notes: `${fmt(restart.readyCpuMs, 0)} CPU-ms until then` });
  run.row({ metric: 'restart with the mirror → first GET served', unit: 'ms', value: restart.getMs, digits: 0, target: '≤ 1,000 ms', met: restart.getMs <= 1000, notes: `${fmt(restart.getCpuMs, 0)} CPU-ms until then` });
  run.row({ metric: 'GitTarget create → Ready (snapshot pushed)', unit: 's', value: snapshotMs / 1000, digits: 1 });
  run.note(`baseline: ${PEER.source}; peer RSS ${peerRss ?? '—'} MiB at ${n.toLocaleString('en-US')} objects, no measurable CPU at rest, ready in 0.1 s. Wall-clock times follow the machine's load (load average in the record); CPU-ms and RSS much less so.`);
  run.write();
}

async function main(): Promise<void> {
  const tmp = tempDir('reverser-bench-peer-');
  const onSignal = () => void cleanup([tmp]).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const redis = await startRedis(tmp);
    for (const [k, n] of SIZES.entries()) await benchSize(n, tmp, redis.url, 1 + k);
  } finally {
    await cleanup([tmp]);
  }
}

main().catch((e) => {
  log(`peer bench failed: ${(e as Error).stack ?? e}`);
  process.exitCode = 1;
});
