// A tenant's git remote as the attacker (test/controllers/remote-backoff.test.ts and
// test/git/remote-limits.test.ts assert the same on a harness; here it is the whole server): a
// remote streaming a body without end at a GitTarget (what it costs the server's memory, before and
// after the GitTarget is deleted, and what the GitTarget says), and remotes that fail in ways no
// retry fixes (401, 403, 404, a web page without receive-pack): how many requests one GitTarget
// sends them a minute and how many log lines that costs. The remotes are small HTTP servers in this
// process (test/support/hostile-remote.ts); the GitTargets mirror the sandbox's ConfigMaps, so the
// first snapshot is due at once.
import { writeFileSync } from 'node:fs';
import { rssMiB } from '../common/proc.js';
import { type Attack, type Context, type Params } from './harness.js';
import { startHostileRemote, type HostileMode, type HostileRemote } from '../../test/support/hostile-remote.js';

const GTS = '/apis/configbutler.ai/v1alpha1/namespaces/default/gittargets';
const CAP_MIB = 128; // --git-max-response-bytes' default (docs/configuration.md)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const seconds = (p: Params, name: string, full: number, quick: number) => Number(p.arg(name) ?? (p.quick ? quick : full));
const bodySeconds = (p: Params) => seconds(p, 'remote-body-seconds', 30, 15);
const loopSeconds = (p: Params) => seconds(p, 'hot-loop-seconds', 60, 20);

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

function gitTarget(name: string, url: string): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name },
    spec: { repository: { url }, branch: 'main', path: name, resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['default'] }], commit: { idleSeconds: 0 } },
  });
}

async function create(ctx: Context, name: string, url: string): Promise<void> {
  const r = await ctx.writer.request('POST', GTS, { body: gitTarget(name, url), timeoutMs: 60_000 });
  if (r.status !== 201) throw new Error(`creating GitTarget ${name}: ${r.status} ${r.text.slice(0, 300)}`);
}

async function repositoryReady(ctx: Context, name: string): Promise<Condition | undefined> {
  const r = await ctx.writer.request('GET', `${GTS}/${name}`, { timeoutMs: 60_000 });
  return ((r.body?.status?.conditions ?? []) as Condition[]).find((c) => c.type === 'RepositoryReady');
}

async function waitFor<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms: number, every = 200): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

async function removeAll(ctx: Context, names: string[]): Promise<void> {
  for (const n of names) await ctx.writer.request('DELETE', `${GTS}/${n}`, { timeoutMs: 60_000 });
}

/** Resets the server's peak RSS (VmHWM), so that it reports this attack's peak alone (proc(5) clear_refs). */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Counts the server's log lines from now on, with the time each arrived. */
function logLines(ctx: Context): { lines: Array<{ at: number; text: string }>; stop(): void } {
  const lines: Array<{ at: number; text: string }> = [];
  let partial = '';
  const onData = (b: Buffer) => {
    const parts = (partial + b.toString()).split('\n');
    partial = parts.pop()!;
    for (const text of parts) if (text.trim() !== '') lines.push({ at: Date.now(), text });
  };
  ctx.server.proc.stdout!.on('data', onData);
  ctx.server.proc.stderr!.on('data', onData);
  return {
    lines,
    stop: () => {
      ctx.server.proc.stdout!.off('data', onData);
      ctx.server.proc.stderr!.off('data', onData);
    },
  };
}

const remotes = new Map<string, HostileRemote>();
async function remote(name: string, mode: HostileMode): Promise<HostileRemote> {
  // No upstream: none of these modes forwards (port 9 is discard, never dialled).
  const r = await startHostileRemote(9, mode);
  remotes.set(name, r);
  return r;
}
async function closeRemotes(names: string[]): Promise<void> {
  for (const n of names) await remotes.get(n)?.close();
}

const LOOP: Array<{ name: string; mode: HostileMode; what: string }> = [
  { name: 'loop-401', mode: 'status401', what: '401' },
  { name: 'loop-403', mode: 'status403', what: '403' },
  { name: 'loop-404', mode: 'status404', what: '404' },
  { name: 'loop-web', mode: 'plain200', what: 'a 200 web page without receive-pack' },
];

let peakReset = false;

export const remoteAttacks: Attack[] = [
  {
    key: 'remote-body',
    order: 9,
    title: 'A git remote streaming an endless body',
    serverArgs: ['--sandbox'],
    params: (p) => ({ observeSeconds: bodySeconds(p), capMiB: CAP_MIB }),
    async prepare() {
      await remote('body', 'endless');
    },
    note: (p) =>
      `A GitTarget (idleSeconds 0, mirroring the sandbox's ConfigMaps) whose remote answers every request with a git advertisement that never ends (64 KiB chunks as fast as they are read). Watched for ${bodySeconds(p)} s from its creation (its first attempt and the retries the backoff allows), then deleted; "after" is the server once the GitTarget is gone. \`--git-max-response-bytes\` at its default (${CAP_MIB} MiB).`,
    afterMs: 5_000,
    async run(ctx) {
      const r = remotes.get('body')!;
      const before = rssMiB(ctx.server.pid).rss;
      peakReset = resetPeak(ctx.server.pid);
      const created = Date.now();
      await create(ctx, 'body', r.url('body'));
      const cond = await waitFor('RepositoryReady False', async () => {
        const c = await repositoryReady(ctx, 'body');
        return c?.status === 'False' ? c : undefined;
      }, 180_000, 100);
      const visibleS = (Date.now() - created) / 1000;
      const firstBytes = r.bytesStreamed();
      await sleep(Math.max(0, created + bodySeconds(ctx.params) * 1000 - Date.now()));
      const requests = r.requestCount();
      const streamed = r.bytesStreamed();
      const peak = rssMiB(ctx.server.pid).hwm;
      const deletedAt = Date.now();
      await removeAll(ctx, ['body']);
      await waitFor('the remote to see its connections closed', () => (r.openRequests() === 0 ? true : undefined), 30_000, 20);
      const stoppedMs = Date.now() - deletedAt;
      const bytesAtStop = r.bytesStreamed();
      await sleep(1_000);
      const leaked = r.bytesStreamed() - bytesAtStop;
      await closeRemotes(['body']);
      const MiB = 1024 * 1024;
      return {
        text:
          `RepositoryReady ${cond.status} ${cond.reason} after ${visibleS.toFixed(1)} s: "${cond.message}"; the remote sent ${(firstBytes / MiB).toFixed(0)} MiB by then, ` +
          `${(streamed / MiB).toFixed(0)} MiB in ${requests} requests over ${bodySeconds(ctx.params)} s; server RSS ${before.toFixed(0)} MiB before, peak ${peakReset ? '' : '(VmHWM since start) '}${peak.toFixed(0)} MiB; ` +
          `after the delete the transfer stopped within ${stoppedMs} ms (${leaked} bytes more in the next second)`,
        rows: [
          { metric: `peak RSS growth (cap ${CAP_MIB} MiB)`, unit: 'MiB', value: peak - before, baseline: before, baselineLabel: 'RSS before', target: `≤ 2 × cap (${2 * CAP_MIB} MiB)`, met: peakReset && peak - before <= 2 * CAP_MIB, notes: `peak ${peak.toFixed(0)} MiB (VmHWM${peakReset ? ', reset at the start' : ', not resettable: since the server started'})` },
          { metric: 'bytes sent by the remote per request', unit: 'MiB', value: streamed / MiB / Math.max(1, requests), target: `≈ cap (${CAP_MIB} MiB)`, met: streamed / Math.max(1, requests) <= (CAP_MIB + 16) * MiB, notes: `${requests} requests in ${bodySeconds(ctx.params)} s; ${cond.reason}` },
          { metric: 'RepositoryReady False after', unit: 's', value: visibleS, notes: `${cond.reason}: ${cond.message}` },
          { metric: 'transfer stopped after the delete', unit: 'ms', value: stoppedMs, notes: `${leaked} bytes in the second after` },
        ],
      };
    },
  },
  {
    key: 'remote-hotloop',
    order: 10,
    title: 'Git remotes failing in ways a retry cannot fix',
    serverArgs: ['--sandbox'],
    params: (p) => ({ observeSeconds: loopSeconds(p), remotes: LOOP.map((l) => l.mode) }),
    async prepare() {
      for (const l of LOOP) await remote(l.name, l.mode);
    },
    note: (p) =>
      `Four GitTargets (idleSeconds 0, mirroring the sandbox's ConfigMaps), each with a remote of its own answering every request with ${LOOP.map((l) => l.what).join(', ')}. Requests each remote receives, and the server's log lines (\`--log-level=warn\`), counted over ${loopSeconds(p)} s from each remote's first request; then the GitTargets are deleted.`,
    async run(ctx) {
      const log = logLines(ctx);
      const windowMs = loopSeconds(ctx.params) * 1000;
      for (const l of LOOP) await create(ctx, l.name, remotes.get(l.name)!.url(l.name));
      const firsts = await Promise.all(LOOP.map((l) => waitFor(`a first request at ${l.name}`, () => remotes.get(l.name)!.requests[0]?.at, 120_000, 50)));
      await sleep(Math.max(0, Math.max(...firsts) + windowMs - Date.now()));
      const perMinute = (n: number) => (n * 60_000) / windowMs;
      const start = Math.min(...firsts);
      const results = await Promise.all(
        LOOP.map(async (l, i) => {
          const first = firsts[i]!;
          const requests = remotes.get(l.name)!.requests.filter((q) => q.at <= first + windowMs).length;
          const lines = log.lines.filter((x) => x.at <= first + windowMs && x.text.includes(`/default/${l.name}"`)).length;
          const c = await repositoryReady(ctx, l.name);
          return { ...l, requests, lines, cond: c };
        }),
      );
      const allLines = log.lines.filter((x) => x.at >= start && x.at <= start + windowMs).length;
      log.stop();
      await removeAll(ctx, LOOP.map((l) => l.name));
      await closeRemotes(LOOP.map((l) => l.name));
      return {
        text:
          results.map((r) => `${r.what}: ${r.requests} requests, ${r.lines} log lines in ${loopSeconds(ctx.params)} s, RepositoryReady ${r.cond?.status} ${r.cond?.reason}`).join('; ') +
          `; all server log lines in the window: ${allLines}`,
        rows: [
          ...results.flatMap((r) => [
            { metric: `${r.what}: requests a minute from one GitTarget`, unit: 'req/min', value: perMinute(r.requests), digits: 1, target: '≤ 6 (a few)', met: perMinute(r.requests) <= 6, notes: `${r.requests} in ${loopSeconds(ctx.params)} s; RepositoryReady ${r.cond?.status} ${r.cond?.reason}` },
            { metric: `${r.what}: log lines a minute for its GitTarget`, unit: 'lines/min', value: perMinute(r.lines), digits: 1, target: 'one per state change', met: r.lines <= 1, notes: `${r.lines} in ${loopSeconds(ctx.params)} s` },
          ]),
          { metric: 'server log lines a minute, all four failing', unit: 'lines/min', value: perMinute(allLines), digits: 1 },
        ],
      };
    },
  },
];
