// The machinery of the attack run (bench/attack/run.ts): an HTTP/2 client that reconnects, and a
// context that samples the server (metric series, RSS, open fds, event-loop delay, /healthz from a
// separate connection) before, during and after one attack, prints the phases and writes the raw
// samples and a summary to bench/results/ (attack.<slug>). An attack is an entry of type Attack
// (bench/attack/attacks-*.ts); adding one is writing an entry and listing it in run.ts.
import { readdirSync } from 'node:fs';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { rssMiB, type Child } from '../common/proc.js';
import { beginRun, type Run, type SummaryRow } from '../common/results.js';
import { h2request } from '../../test/security/http-support.js';

export type Client = { request: (method: string, path: string, o?: Parameters<typeof h2request>[3]) => ReturnType<typeof h2request>; close(): void };

/**
 * An HTTP/2 client that reconnects: the server closes sessions idle for longer than the idle
 * timeout (GOAWAY), as kube-apiserver does; Go's client reconnects on its own, node's does not.
 */
export function reconnecting(url: string, opts: object): Client {
  let s: ClientHttp2Session | undefined;
  const live = () => {
    if (!s || s.closed || s.destroyed) {
      s = h2connect(url, opts);
      s.on('error', () => {});
      s.on('goaway', function (this: ClientHttp2Session) {
        if (s === this) s = undefined;
      });
    }
    return s;
  };
  return {
    async request(method, path, o) {
      try {
        return await h2request(live(), method, path, o);
      } catch (e) {
        if (!/REFUSED_STREAM|GOAWAY|session/i.test(String((e as Error).message))) throw e;
        s = undefined;
        return h2request(live(), method, path, o);
      }
    },
    close: () => s?.close(),
  };
}

export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export interface Sample {
  series: number;
  rssMiB: number;
  fds: number;
  loopMaxMs: number;
  loopP99Ms: number;
}

export interface Phase {
  name: string;
  samples: Sample[];
  healthzMs: number[];
  /** The bench process's own event-loop delay max in the phase (the attacker's work, not the server's). */
  benchLoopMaxMs: number;
}

/** The /healthz bystander in a thread of its own (healthz-pinger.ts), so the bench's own work is not in its timings. */
export interface Bystander {
  start(): void;
  stop(): Promise<number[]>;
  close(): Promise<void>;
}

export async function bystander(url: string, tls: object): Promise<Bystander> {
  const worker = new Worker(new URL('./healthz-pinger.js', import.meta.url), { workerData: { url, tls } });
  worker.unref(); // a failed run must not be held open by its bystander
  worker.on('error', (e) => process.stderr.write(`healthz bystander: ${(e as Error).message}\n`));
  return {
    start: () => worker.postMessage('start'),
    stop: () =>
      new Promise((ok) => {
        worker.once('message', (m: { ms: number[] }) => ok(m.ms));
        worker.postMessage('stop');
      }),
    close: async () => {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}

/** What an attack reports: one line of outcome, and rows of its own (answer time, CPU ...) for the summary. */
export interface Outcome {
  text: string;
  rows?: SummaryRow[];
}

export interface Params {
  quick: boolean;
  legacy: boolean;
  /** `--as=tenant`: the attacks send with a tenant's client certificate (run.ts), not the admin's. */
  tenant: boolean;
  /** `--name=value` of the command line, if given. */
  arg(name: string): string | undefined;
}

export interface Context {
  url: string;
  port: number;
  ca: string;
  admin: { ca: string; cert: string; key: string };
  /** Client for the attack's own requests: the admin's, or with `--as=tenant` the tenant's. */
  writer: Client;
  /** TLS options of the attacker's own connections (the CA, and the tenant's certificate with `--as=tenant`). */
  attackerTLS: { ca: string; cert?: string; key?: string };
  params: Params;
  /** The server's pid and whether it still runs. */
  server: Child;
  alive(): boolean;
}

export interface Attack {
  /** Name for `--only=` (several attacks may share one, e.g. `lists`). */
  key: string;
  /** Position in the printed run and the generated table; also the title's number. */
  order: number;
  title: string;
  /** Flags the server needs for this attack (e.g. `--sandbox`). */
  serverArgs?: string[];
  /** Parameters recorded with the results. */
  params?(p: Params): Record<string, unknown>;
  /** Sets up what the attack needs (not measured); returns the note printed above its table. */
  prepare?(ctx: Context): Promise<void>;
  note(p: Params): string;
  run(ctx: Context): Promise<Outcome>;
  /** How long "after" lasts (default: the run's phase length). */
  afterMs?: number;
  /** Sends without credentials (before authentication, or answered 401) unless `--as=tenant` gives it some. */
  anonymous?: boolean;
  /** Runs only without `--as=tenant` (credentials change nothing about it). */
  anonymousOnly?: boolean;
}

/** Who sends the attack's requests, as the records and the generated table say. */
export function attacker(a: Attack, p: Params): string {
  if (a.anonymousOnly) return 'anonymous';
  if (p.tenant) return 'tenant (namespace edit role)';
  return a.anonymous ? 'anonymous' : 'admin (system:masters)';
}

export function sampler(ctx: Context, scraper: Client, pinger: Bystander, phaseMs: number) {
  const sample = async (): Promise<Sample> => {
    if (!ctx.alive()) return { series: NaN, rssMiB: NaN, fds: NaN, loopMaxMs: NaN, loopP99Ms: NaN };
    const text = (await scraper.request('GET', '/metrics', { timeoutMs: 120_000 }).catch(() => ({ text: '' }))).text;
    const gauge = (n: string) => Number(new RegExp(`^${n} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
    return {
      // GC-duration series appear once per kind of GC (a fixed set) whenever one first runs.
      series: text.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('nodejs_gc_duration_seconds')).length,
      rssMiB: ctx.alive() ? rssMiB(ctx.server.pid).rss : NaN,
      fds: ctx.alive() ? readdirSync(`/proc/${ctx.server.pid}/fd`).length : NaN,
      loopMaxMs: gauge('nodejs_eventloop_lag_max_seconds'),
      loopP99Ms: gauge('nodejs_eventloop_lag_p99_seconds'),
    };
  };

  // A phase samples the server every 250 ms and pings /healthz every 20 ms (in the bystander's
  // thread) until `until` settles.
  const phase = async (name: string, until: Promise<unknown> | number): Promise<Phase> => {
    const p: Phase = { name, samples: [], healthzMs: [], benchLoopMaxMs: NaN };
    let running = true;
    const benchLoop = monitorEventLoopDelay({ resolution: 10 });
    benchLoop.enable();
    pinger.start();
    const samples = (async () => {
      await sample(); // resets the event-loop histogram: each phase reports its own delay
      while (running) {
        await new Promise((r) => setTimeout(r, 250));
        p.samples.push(await sample());
      }
    })();
    await (typeof until === 'number' ? new Promise((r) => setTimeout(r, until)) : until);
    running = false;
    p.healthzMs = await pinger.stop();
    await samples;
    benchLoop.disable();
    p.benchLoopMaxMs = benchLoop.max / 1e6;
    return p;
  };

  /** Runs one attack between a quiet "before" and "after", prints its table, writes its record. */
  const run = async (a: Attack): Promise<void> => {
    const title = `${a.order}. ${a.title}`;
    const who = attacker(a, ctx.params);
    const slug = `${a.title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}${ctx.params.tenant ? '-as-tenant' : ''}${ctx.params.legacy ? '-before' : ''}`;
    await a.prepare?.(ctx);
    const rec = beginRun({
      bench: 'attack',
      scenario: `attack.${slug}`,
      title: `${title}, as ${who}`,
      columns: { value: 'during / after', baseline: 'before' },
      order: a.order + (ctx.params.legacy ? 0.5 : 0) + (ctx.params.tenant ? 0.25 : 0),
      params: { quick: ctx.params.quick, legacy: ctx.params.legacy, attacker: who, ...(ctx.params.arg('server-main') ? { serverMain: ctx.params.arg('server-main') } : {}), phaseMs, ...(a.params?.(ctx.params) ?? {}) },
    });
    const before = await phase('before', phaseMs);
    let outcome: Outcome = { text: '' };
    const during = await phase('during', a.run(ctx).then((o) => (outcome = o)));
    const after = await phase('after', a.afterMs ?? phaseMs);
    report(`${title}, as ${who}`, [before, during, after], `${a.note(ctx.params)}\nOutcome: ${outcome.text}`);
    record(rec, a.title + (ctx.params.tenant ? ' (as tenant)' : '') + (ctx.params.legacy ? ' (before the fix)' : ''), [before, during, after], outcome);
  };
  return { sample, phase, run };
}

function report(title: string, phases: Phase[], note: string): void {
  console.log(`\n## ${title}\n${note}\n`);
  console.log('| phase | metric series (without GC kinds) | RSS MiB | open fds | event-loop delay max / p99 (ms) | /healthz p50 / p99 / max (ms) | bench\'s own loop delay max (ms) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const p of phases) {
    const last = p.samples.at(-1);
    const maxOf = (f: (s: Sample) => number) => Math.max(...p.samples.map(f));
    console.log(
      `| ${p.name} | ${last?.series ?? '-'} | ${last ? last.rssMiB.toFixed(0) : '-'} (max ${maxOf((s) => s.rssMiB).toFixed(0)}) | ${last?.fds ?? '-'} (max ${maxOf((s) => s.fds)}) | ` +
        `${maxOf((s) => s.loopMaxMs).toFixed(1)} / ${maxOf((s) => s.loopP99Ms).toFixed(1)} | ${quantile(p.healthzMs, 0.5).toFixed(1)} / ${quantile(p.healthzMs, 0.99).toFixed(1)} / ${Math.max(...p.healthzMs).toFixed(1)} | ${p.benchLoopMaxMs.toFixed(1)} |`,
    );
  }
}

/** The attack's raw samples and a summary (RSS, /healthz, event-loop delay: during and after against before) as a results record. */
function record(rec: Run, name: string, phases: Phase[], outcome: Outcome): void {
  const [before, during, after] = phases as [Phase, Phase, Phase];
  for (const p of phases) {
    rec.samples(`${p.name} RSS MiB`, p.samples.map((s) => s.rssMiB));
    rec.samples(`${p.name} open fds`, p.samples.map((s) => s.fds));
    rec.samples(`${p.name} metric series`, p.samples.map((s) => s.series));
    rec.samples(`${p.name} event-loop delay max ms`, p.samples.map((s) => s.loopMaxMs));
    rec.samples(`${p.name} /healthz ms`, p.healthzMs);
  }
  const max = (p: Phase, f: (s: Sample) => number) => Math.max(...p.samples.map(f));
  for (const row of outcome.rows ?? []) rec.row({ ...row, metric: `${name}: ${row.metric}` });
  const p99 = quantile(during.healthzMs, 0.99);
  rec.row({ metric: `${name}: /healthz p99, during vs before`, unit: 'ms', value: p99, baseline: quantile(before.healthzMs, 0.99), target: '< 100 ms', met: p99 < 100, notes: `max ${Math.max(...during.healthzMs).toFixed(1)} vs ${Math.max(...before.healthzMs).toFixed(1)} ms; p50 ${quantile(during.healthzMs, 0.5).toFixed(1)} vs ${quantile(before.healthzMs, 0.5).toFixed(1)} ms` });
  rec.row({ metric: `${name}: event-loop delay max, during vs before`, unit: 'ms', value: max(during, (s) => s.loopMaxMs), baseline: max(before, (s) => s.loopMaxMs), notes: `the bench process's own: ${during.benchLoopMaxMs.toFixed(1)} vs ${before.benchLoopMaxMs.toFixed(1)} ms (the /healthz bystander runs in a thread of its own)` });
  rec.row({ metric: `${name}: server RSS, after vs before`, unit: 'MiB', value: after.samples.at(-1)?.rssMiB ?? NaN, baseline: before.samples.at(-1)?.rssMiB ?? NaN, notes: `max during ${max(during, (s) => s.rssMiB).toFixed(0)} MiB; open fds after ${after.samples.at(-1)?.fds ?? '?'} vs before ${before.samples.at(-1)?.fds ?? '?'}; metric series after ${after.samples.at(-1)?.series ?? '?'} vs before ${before.samples.at(-1)?.series ?? '?'}` });
  rec.note(`outcome: ${outcome.text}`);
  rec.write();
}
