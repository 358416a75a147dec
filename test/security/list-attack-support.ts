// Measuring one request made of one long list (test/security/http-list-*.test.ts): /healthz is
// polled every 10 ms from another connection while it runs and, for as long again, while nothing
// runs (the baseline: on a shared, loaded machine /healthz is not instant either), and the server's
// CPU time for the request is read from /proc.
import { readFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { h2request, type H2Response } from './http-support.js';

export interface Measured {
  r: H2Response;
  /** Server CPU (user + system) spent while the request ran, ms. */
  cpuMs: number;
  healthzP99: number;
  healthzMax: number;
  baselineP99: number;
  baselineMax: number;
}

export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
}

/** utime + stime of a process, in ms (Linux /proc; clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

async function pollHealthz(bystander: ClientHttp2Session, during: () => Promise<unknown>): Promise<number[]> {
  let polling = true;
  const ms: number[] = [];
  const poller = (async () => {
    while (polling) {
      const r = await h2request(bystander, 'GET', '/healthz', { timeoutMs: 120_000 });
      if (r.status !== 200) throw new Error(`/healthz answered ${r.status}: ${r.text}`);
      ms.push(r.ms);
      await new Promise((ok) => setTimeout(ok, 10));
    }
  })();
  await new Promise((ok) => setTimeout(ok, 30));
  try {
    await during();
  } finally {
    await new Promise((ok) => setTimeout(ok, 30));
    polling = false;
    await poller;
  }
  return ms;
}

/** Sends one request while polling /healthz, then polls as long again without it. */
export async function measure(pid: number, bystander: ClientHttp2Session, send: () => Promise<H2Response>): Promise<Measured> {
  let r!: H2Response;
  const before = cpuMs(pid);
  const during = await pollHealthz(bystander, async () => {
    r = await send();
  });
  const cpu = cpuMs(pid) - before;
  const baseline = await pollHealthz(bystander, () => new Promise((ok) => setTimeout(ok, Math.max(300, r.ms))));
  return { r, cpuMs: cpu, healthzP99: quantile(during, 0.99), healthzMax: Math.max(...during), baselineP99: quantile(baseline, 0.99), baselineMax: Math.max(...baseline) };
}

export function describe(m: Measured): string {
  return `${m.r.status} in ${m.r.ms.toFixed(0)} ms, server CPU ${m.cpuMs} ms (stretch ${stretch(m).toFixed(1)}), /healthz p99 ${m.healthzP99.toFixed(1)} ms (max ${m.healthzMax.toFixed(1)}; idle baseline p99 ${m.baselineP99.toFixed(1)}, max ${m.baselineMax.toFixed(1)})`;
}

/**
 * How much longer than its CPU time the request took on the wall clock (at least 1): on an idle
 * machine about 1; on a shared one the server gets a fraction of a core and every stretch of work,
 * a /healthz wait included, is that many times longer.
 */
export const stretch = (m: Measured) => Math.max(1, m.r.ms / Math.max(m.cpuMs, 10));

/**
 * The bound on /healthz while a list request runs: its p99 under 100 ms on an idle machine. On a
 * loaded one, the p99 in the server's own time (divided by the stretch) may exceed the idle
 * baseline's p99 by at most 100 ms: a request that holds the event loop for its whole run fails it
 * however loaded the machine is (its /healthz wait is then the whole request, the stretch × CPU).
 */
export const healthzWithinBound = (m: Measured) => m.healthzP99 < 100 || m.healthzP99 / stretch(m) < 100 + m.baselineP99;
