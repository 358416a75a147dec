// What a server costs at rest with its controllers on, holding the bench's suspended GitTargets:
// Redis commands second by second through its start-up (informers, first reconcile of every
// GitTarget), then Redis commands per second and CPU of the server and of redis-server at rest, against the same
// figures just before it started (the other bench processes idle, controllers off). The rest of the
// API bench runs its servers with --controllers=none, so none of this is in their figures.
import { Redis } from 'ioredis';
import { fmt } from '../common/load.js';
import type { Child } from '../common/proc.js';
import { commandDelta, cpuMeter, redisCommandCalls } from '../common/cpu.js';
import type { Run } from '../common/results.js';

export interface IdleContext {
  run: Run;
  redisUrl: string;
  redisPid: number;
  /** The Redis hash of every GitTarget (the count is read from it: CREATE adds to the bench's). */
  objectsKey: string;
  /**
   * How long after it serves the start-up is watched (second by second) at least, before the
   * measured window; then on until QUIET_SECONDS seconds in a row stay under QUIET_CMDS_PER_S Redis
   * commands (its first pass over every GitTarget is done), for at most maxSettleMs.
   */
  settleMs: number;
  maxSettleMs: number;
  measureMs: number;
  startServer(): Promise<{ child: Child; port: number }>;
  log(s: string): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * When the start-up is over: a first start over 26,000 GitTargets that no controller has seen
 * reconciles each of them once (a status write each), which at ~1,200 a second on this machine
 * began 15 s after it served and was still going 30 s after; measured then, that first pass read
 * as 67% of a core "at rest". The at-rest target at 10,000 tenants is ≤ 50 commands/s (issue 24).
 */
const QUIET_SECONDS = 5;
const QUIET_CMDS_PER_S = 50;
const rate = (c: Record<string, number>, ms: number) => Object.values(c).reduce((a, b) => a + b, 0) / (ms / 1000);
/** The five busiest commands: per second over `ms`, or as counts without it. */
const top = (c: Record<string, number>, ms?: number) =>
  Object.entries(c)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([k, v]) => `${k.toUpperCase()} ${ms ? `${fmt(v / (ms / 1000), 0)}/s` : fmt(v, 0)}`)
    .join(', ') || 'none';

export async function benchIdle(ctx: IdleContext): Promise<void> {
  const redis = new Redis(ctx.redisUrl);
  try {
    const window = async (pids: Record<string, number>, wantMs: number) => {
      const c0 = await redisCommandCalls(redis);
      const meter = cpuMeter(pids);
      const t0 = performance.now();
      await sleep(wantMs);
      const d = meter.delta();
      const ms = performance.now() - t0;
      return { cmds: commandDelta(c0, await redisCommandCalls(redis)), cpu: d, ms };
    };
    const targets = await redis.hlen(ctx.objectsKey);
    const before = await window({ redis: ctx.redisPid }, ctx.measureMs);
    const srv = await ctx.startServer();
    const pids = { redis: ctx.redisPid, server: srv.child.pid };
    // The first settleMs after it serves, second by second (informers, first reconcile of every
    // GitTarget, leases), then the measured window.
    const perSecond: number[] = [];
    const startup: Record<string, number> = {};
    const s0 = performance.now();
    let quiet = 0;
    while (performance.now() - s0 < ctx.maxSettleMs && (performance.now() - s0 < ctx.settleMs || quiet < QUIET_SECONDS)) {
      const w = await window(pids, 1000);
      for (const [k, v] of Object.entries(w.cmds)) startup[k] = (startup[k] ?? 0) + v;
      perSecond.push(rate(w.cmds, w.ms));
      quiet = perSecond.at(-1)! < QUIET_CMDS_PER_S ? quiet + 1 : 0;
    }
    const settledMs = performance.now() - s0;
    const settled = quiet >= QUIET_SECONDS;
    const startupCount = Object.values(startup).reduce((a, b) => a + b, 0);
    const during = await window(pids, ctx.measureMs);
    await srv.child.stop();
    const r0 = rate(before.cmds, before.ms);
    const r1 = rate(during.cmds, during.ms);
    const share = (cpuMs: number, ms: number) => (100 * cpuMs) / ms;
    ctx.run.samples('Redis commands/s before, with the idle server', [r0, r1]);
    ctx.run.samples('Redis commands/s in each second after the server served', perSecond);
    ctx.run.samples('server CPU % of a core, redis-server CPU % before and with the idle server', [share(during.cpu.server!, during.ms), share(before.cpu.redis!, before.ms), share(during.cpu.redis!, during.ms)]);
    ctx.run.row({
      metric: `idle server, controllers on, ${targets.toLocaleString('en-US')} suspended GitTargets: Redis commands`,
      unit: 'cmd/s',
      value: r1,
      baseline: r0,
      baselineLabel: 'before it started',
      digits: 0,
      notes: `first ${fmt(settledMs / 1000, 0)} s after it served (${settled ? `until ${QUIET_SECONDS} s in a row under ${QUIET_CMDS_PER_S} commands/s` : `NOT settled: still over ${QUIET_CMDS_PER_S} commands/s at the ${fmt(ctx.maxSettleMs / 1000, 0)} s cap`}): ${fmt(startupCount, 0)} Redis commands, at most ${fmt(Math.max(...perSecond), 0)}/s (${top(startup)}); then ${fmt(ctx.measureMs / 1000, 0)} s measured: server ${fmt(share(during.cpu.server!, during.ms), 1)}% of a core, redis-server ${fmt(share(during.cpu.redis!, during.ms), 1)}% (before ${fmt(share(before.cpu.redis!, before.ms), 1)}%); commands: ${top(during.cmds, during.ms)}`,
    });
    ctx.log(`start-up ${settled ? "settled" : "NOT settled"} after ${fmt(settledMs / 1000, 0)} s (${fmt(startupCount, 0)} Redis commands); idle server with controllers: ${fmt(r1, 0)} Redis commands/s (before: ${fmt(r0, 0)}/s): ${top(during.cmds, during.ms)}; server CPU ${fmt(share(during.cpu.server!, during.ms), 1)}%`);
    ctx.run.write();
  } finally {
    redis.disconnect();
  }
}
