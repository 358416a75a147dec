// GET by name as a non-admin user through each authorizer, against the floor.
// Four sides, each called by `bench-user` (a dev-CA client certificate, not system:masters) on the
// same names, interleaved (the order rotates every round):
//   floor       bench/api/floor.ts: TLS, HTTP, one HGET, the stored bytes back
//   AlwaysAllow the server with no authorizer (the reference for the authorizers' cost)
//   RBAC        the server with --authorization-mode=RBAC and a policy file granting get
//   Delegated   the server with --authorization-mode=Delegated against the hosting-cluster double
//               (test/support/fake-hosting-cluster.ts, allows everything), decision cache warmed
// Beside req/s (bounded by the load generator's one core as much as by the server), each run
// records the CPU time the serving process and redis-server spent per request (/proc/<pid>/stat),
// the load generator's own CPU, and the Redis commands per request (INFO commandstats).
import { writeFileSync } from 'node:fs';
import type https from 'node:https';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { agentFor, fmt, median, quantile, request, runLoad, type LoadResult, type Target } from '../common/load.js';
import type { Child } from '../common/proc.js';
import { commandDelta, cpuMeter, redisCommandCalls as commandCalls } from '../common/cpu.js';
import { baselineSpread, beginRun, spread } from '../common/results.js';
import { startFakeHostingCluster } from '../../test/support/fake-hosting-cluster.js';
import { issueCertificate } from '../../src/certs/pki.js';

export interface GetContext {
  tmp: string;
  pem(file: string): string;
  redisUrl: string;
  redisPid: number;
  floorPort: number;
  floorPid: number;
  startServer(dataDir: string, extra: string[]): Promise<{ child: Child; port: number }>;
  objects: number;
  concurrency: number;
  rounds: number;
  getMs: number;
  warmMs: number;
  groupPath: string;
  ns: string;
  name(i: number): string;
  params: Record<string, unknown>;
  pinning?: { loadGenerator: string; systemUnderTest: string };
  log(s: string): void;
}

interface Side {
  key: 'floor' | 'allow' | 'rbac' | 'delegated';
  label: string;
  target: Target;
  agent: https.Agent;
  pid: number;
  path(name: string): string;
}

interface RunStats {
  rps: number;
  p99: number;
  count: number;
  procUs: number;
  redisUs: number;
  loadGenUs: number;
  loadGenShare: number;
  cmds: Record<string, number>;
}

/** Other users' bindings before bench-user's, so the authorizer has a realistic list to scan. */
const OTHER_BINDINGS = 10;

function policy(ns: string): string {
  const docs: unknown[] = [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'gittarget-reader' }, rules: [{ apiGroups: ['configbutler.ai'], resources: ['gittargets'], verbs: ['get'] }] },
  ];
  for (let i = 0; i <= OTHER_BINDINGS; i++) {
    const user = i === OTHER_BINDINGS ? 'bench-user' : `other-user-${i}`;
    docs.push({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `readers-${user}`, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'gittarget-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
  }
  return docs.map((d) => JSON.stringify(d)).join('\n---\n') + '\n';
}

function check(r: LoadResult, what: string): LoadResult {
  if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors of ${r.count}; first: ${r.firstError}`);
  return r;
}

const us = (x: number) => fmt(x, 0);
const cmdText = (c: Record<string, number>) =>
  Object.entries(c).filter(([, v]) => v >= 0.005).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k.toUpperCase()} ${fmt(v, 2)}`).join(' + ') || 'none';

export async function benchGet(ctx: GetContext): Promise<void> {
  const run = beginRun({ bench: 'api', scenario: 'api.get', title: 'GET by name, non-admin user, per authorizer', columns: { value: 'server', baseline: 'floor' }, order: 1, params: ctx.params });
  if (ctx.pinning) {
    run.pin('load generator (bench process)', `cpu ${ctx.pinning.loadGenerator}`);
    run.pin('servers, floor, redis-server', `cpu ${ctx.pinning.systemUnderTest}`);
  }
  const fake = await startFakeHostingCluster();
  const redis = new Redis(ctx.redisUrl);
  const agents: https.Agent[] = [];
  const servers: Child[] = [];
  try {
    fake.onSAR = () => ({ allowed: true });
    const user = issueCertificate({ certPem: ctx.pem('ca.crt'), keyPem: ctx.pem('ca.key') }, { commonName: 'bench-user', organizations: ['bench-group'], usage: 'client' });
    const tls = { ca: ctx.pem('ca.crt'), cert: user.certPem, key: user.keyPem };
    const policyFile = join(ctx.tmp, 'rbac-policy.yaml');
    writeFileSync(policyFile, policy(ctx.ns));
    const allow = await ctx.startServer(join(ctx.tmp, 'data-get-allow'), ['--authorization-mode=AlwaysAllow']);
    const rbac = await ctx.startServer(join(ctx.tmp, 'data-get-rbac'), ['--authorization-mode=RBAC', `--authorization-policy-file=${policyFile}`]);
    const deleg = await ctx.startServer(join(ctx.tmp, 'data-get-delegated'), [
      '--authorization-mode=Delegated',
      '--kubeconfig', fake.kubeconfigPath,
      '--authentication-skip-lookup=true',
      '--authorization-webhook-cache-authorized-ttl=5m',
    ]);
    servers.push(allow.child, rbac.child, deleg.child);
    const side = (key: Side['key'], label: string, port: number, pid: number, path: (n: string) => string): Side => {
      const target: Target = { host: '127.0.0.1', port, tls };
      const agent = agentFor(target, ctx.concurrency);
      agents.push(agent);
      return { key, label, target, agent, pid, path };
    };
    const apiPath = (n: string) => `${ctx.groupPath}/namespaces/${ctx.ns}/gittargets/${n}`;
    const sides: Side[] = [
      side('floor', 'floor', ctx.floorPort, ctx.floorPid, (n) => `/floor/obj/${ctx.ns}/${n}`),
      side('allow', 'AlwaysAllow', allow.port, allow.child.pid, apiPath),
      side('rbac', 'RBAC', rbac.port, rbac.child.pid, apiPath),
      side('delegated', 'Delegated (warm cache)', deleg.port, deleg.child.pid, apiPath),
    ];
    // At most 5,000 distinct names: every Delegated decision fits its cache (10,000 entries) and
    // stays there for the whole measurement (allowed TTL 5m). Every side gets the same names.
    const HOT = Math.min(5_000, ctx.objects);
    const rnd = () => ctx.name(Math.floor(Math.random() * HOT));
    for (const s of sides) {
      check(await runLoad(s.target, s.agent, { durationMs: Infinity, maxRequests: HOT, concurrency: ctx.concurrency, expect: 200, next: (i) => ({ method: 'GET', path: s.path(ctx.name(i)) }) }), `warm ${s.label}`);
      check(await runLoad(s.target, s.agent, { durationMs: ctx.warmMs, concurrency: ctx.concurrency, expect: 200, next: () => ({ method: 'GET', path: s.path(rnd()) }) }), `warm ${s.label}`);
    }
    // The authorizers really decide: Delegated asked the hosting cluster once per name while warming,
    // and RBAC refuses a user the policy does not bind.
    if (fake.sars().length < HOT) throw new Error(`the Delegated server sent ${fake.sars().length} SubjectAccessReviews while warming ${HOT} names`);
    const nobody = issueCertificate({ certPem: ctx.pem('ca.crt'), keyPem: ctx.pem('ca.key') }, { commonName: 'bench-nobody', usage: 'client' });
    const nobodyTarget: Target = { host: '127.0.0.1', port: rbac.port, tls: { ...tls, cert: nobody.certPem, key: nobody.keyPem } };
    const nobodyAgent = agentFor(nobodyTarget, 1);
    agents.push(nobodyAgent);
    const refused = await request(nobodyTarget, nobodyAgent, { method: 'GET', path: apiPath(ctx.name(0)) });
    if (refused.status !== 403) throw new Error(`the RBAC server answered ${refused.status} to a user without a binding, want 403`);

    const measure = async (s: Side): Promise<RunStats> => {
      const c0 = await commandCalls(redis);
      const meter = cpuMeter({ proc: s.pid, redis: ctx.redisPid });
      const r = check(await runLoad(s.target, s.agent, { durationMs: ctx.getMs, concurrency: ctx.concurrency, expect: 200, next: () => ({ method: 'GET', path: s.path(rnd()) }) }), `GET ${s.label}`);
      const d = meter.delta();
      const c1 = await commandCalls(redis);
      const cmds = Object.fromEntries(Object.entries(commandDelta(c0, c1)).map(([k, v]) => [k, v / r.count]));
      return {
        rps: r.rps,
        p99: quantile(r.lat, 0.99),
        count: r.count,
        procUs: (d.proc! * 1000) / r.count,
        redisUs: (d.redis! * 1000) / r.count,
        loadGenUs: (d.self! * 1000) / r.count,
        loadGenShare: d.self! / (r.seconds * 1000),
        cmds,
      };
    };
    const stats: Record<Side['key'], RunStats[]> = { floor: [], allow: [], rbac: [], delegated: [] };
    const sars0 = fake.sars().length;
    for (let round = 0; round < ctx.rounds; round++) {
      for (let k = 0; k < sides.length; k++) {
        const s = sides[(round + k) % sides.length]!;
        const st = await measure(s);
        stats[s.key].push(st);
        ctx.log(`GET round ${round + 1} ${s.label}: ${fmt(st.rps, 0)}/s, p99 ${fmt(st.p99)} ms, CPU per GET: process ${us(st.procUs)} µs, redis ${us(st.redisUs)} µs, load generator ${us(st.loadGenUs)} µs (${fmt(100 * st.loadGenShare, 0)}% of a core); redis per GET: ${cmdText(st.cmds)}`);
      }
    }
    const sars = fake.sars().length - sars0;

    const med = (k: Side['key'], f: (s: RunStats) => number) => median(stats[k].map(f));
    const cmdMed = (k: Side['key']) => {
      const keys = new Set(stats[k].flatMap((s) => Object.keys(s.cmds)));
      return Object.fromEntries([...keys].map((c) => [c, median(stats[k].map((s) => s.cmds[c] ?? 0))]));
    };
    for (const s of sides) {
      run.samples(`${s.label} req/s`, stats[s.key].map((x) => x.rps));
      run.samples(`${s.label} p99 ms`, stats[s.key].map((x) => x.p99));
      run.samples(`${s.label} process CPU µs/GET`, stats[s.key].map((x) => x.procUs));
      run.samples(`${s.label} redis-server CPU µs/GET`, stats[s.key].map((x) => x.redisUs));
      run.samples(`${s.label} load generator CPU µs/GET`, stats[s.key].map((x) => x.loadGenUs));
      run.samples(`${s.label} load generator share of its core`, stats[s.key].map((x) => x.loadGenShare));
    }
    const fRps = stats.floor.map((x) => x.rps);
    const lg = (k: Side['key']) => `load generator ${us(med(k, (x) => x.loadGenUs))} µs CPU/GET, ${fmt(100 * med(k, (x) => x.loadGenShare), 0)}% of its core`;
    for (const k of ['allow', 'rbac'] as const) {
      const s = spread(stats[k].map((x) => x.rps));
      const f = baselineSpread(fRps);
      run.row({
        metric: `GET by name, ${k === 'allow' ? 'AlwaysAllow (no authorizer)' : 'RBAC (policy file)'}, non-admin user`,
        unit: 'req/s',
        ...s,
        ...f,
        ratio: s.value / f.baseline,
        ratioStyle: 'percent',
        target: '≥ 50% of floor',
        met: s.value / f.baseline >= 0.5,
        digits: 0,
        notes: `p99 ${fmt(med(k, (x) => x.p99))} vs ${fmt(med('floor', (x) => x.p99))} ms; ${lg(k)} (floor: ${lg('floor')})`,
      });
    }
    {
      const s = spread(stats.delegated.map((x) => x.rps));
      const a = baselineSpread(stats.allow.map((x) => x.rps));
      run.row({
        metric: 'GET by name, Delegated (warm cache) vs AlwaysAllow, same non-admin user',
        unit: 'req/s',
        ...s,
        ...a,
        baselineLabel: 'AlwaysAllow',
        ratio: s.value / a.baseline,
        ratioStyle: 'percent',
        target: '≥ 90% of AlwaysAllow',
        met: s.value / a.baseline >= 0.9,
        digits: 0,
        notes: `${sars} SubjectAccessReviews during measurement (hosting-cluster double); ${fmt((100 * s.value) / median(fRps), 0)}% of floor; p99 ${fmt(med('delegated', (x) => x.p99))} ms; ${lg('delegated')}`,
      });
    }
    const floorCpu = stats.floor.map((x) => x.procUs + x.redisUs);
    for (const k of ['allow', 'rbac', 'delegated'] as const) {
      const s = spread(stats[k].map((x) => x.procUs + x.redisUs));
      const f = baselineSpread(floorCpu);
      run.row({
        metric: `CPU per GET, server + redis-server, ${sides.find((x) => x.key === k)!.label}`,
        unit: 'µs/req',
        ...s,
        ...f,
        ratio: s.value / f.baseline,
        ratioStyle: 'times',
        digits: 0,
        notes: `server ${us(med(k, (x) => x.procUs))} + redis ${us(med(k, (x) => x.redisUs))} µs vs floor ${us(med('floor', (x) => x.procUs))} + redis ${us(med('floor', (x) => x.redisUs))} µs; Redis commands per GET: ${cmdText(cmdMed(k))} vs ${cmdText(cmdMed('floor'))}`,
      });
    }
    if (sars > 0) run.note(`the Delegated cache was not warm: ${sars} SubjectAccessReviews during measurement`);
    run.write();
  } finally {
    for (const a of agents) a.destroy();
    // Stopped here so that they do not take memory or CPU from the parts that follow.
    for (const c of servers) await c.stop();
    redis.disconnect();
    await fake.close();
  }
}
