// Watch fan-out: N open watches on one collection, then single writes; per watcher, the time from
// just before the write is sent to the arrival of its event line. Watches ride HTTP/2 streams
// (as kubectl and client-go do, many per connection) or one HTTP/1.1 connection each. `benchWatch`
// runs server and floor interleaved (A/B, B/A, …) for several rounds per protocol and reports the
// median and range of the rounds' p99.
import http2 from 'node:http2';
import https from 'node:https';
import type { Target, Req } from '../common/load.js';
import { agentFor, fmt, median, quantile, request } from '../common/load.js';
import { rssMiB } from '../common/proc.js';
import { baselineSpread, spread, type Run } from '../common/results.js';

export interface FanoutResult {
  watchers: number;
  events: number;
  /** Latency samples (ms), one per watcher per event. */
  lat: number[];
  missing: number;
  openSeconds: number;
}

interface Watcher {
  lines: number;
  close(): void;
}

type OnLine = (now: number) => void;

function openH2(t: Target, sessions: number): http2.ClientHttp2Session[] {
  return Array.from({ length: sessions }, () =>
    http2.connect(`https://${t.host}:${t.port}`, { ca: t.tls.ca, cert: t.tls.cert, key: t.tls.key }),
  );
}

function h2Watch(session: http2.ClientHttp2Session, path: string, onLine: OnLine): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const s = session.request({ ':method': 'GET', ':path': path, accept: 'application/json' });
    const w: Watcher = { lines: 0, close: () => s.close() };
    s.on('response', (h) => {
      if (h[':status'] !== 200) reject(new Error(`watch ${path}: HTTP ${h[':status']}`));
      else resolve(w);
    });
    s.on('data', (c: Buffer) => {
      const now = performance.now();
      for (let i = c.indexOf(10); i >= 0; i = c.indexOf(10, i + 1)) {
        w.lines++;
        onLine(now);
      }
    });
    s.on('error', reject);
  });
}

function h1Watch(t: Target, agent: https.Agent, path: string, onLine: OnLine): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const q = https.request({ host: t.host, port: t.port, path, agent, headers: { accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`watch ${path}: HTTP ${res.statusCode}`));
      const w: Watcher = { lines: 0, close: () => q.destroy() };
      res.on('data', (c: Buffer) => {
        const now = performance.now();
        for (let i = c.indexOf(10); i >= 0; i = c.indexOf(10, i + 1)) {
          w.lines++;
          onLine(now);
        }
      });
      res.on('error', () => {});
      resolve(w);
    });
    q.on('error', reject);
    q.end();
  });
}

/**
 * Opens `n` watches on `watchPath`, waits `settleMs`, then `events` times: sends `write(i)`, waits
 * until every watcher got one more line (or 10 s), pauses `gapMs`.
 */
export async function fanout(
  t: Target,
  opts: { n: number; protocol: 'h2' | 'h1'; watchPath: string; write: (i: number) => Req; events: number; gapMs: number; settleMs: number },
): Promise<FanoutResult> {
  const lat: number[] = [];
  let t0 = 0;
  let got = 0;
  let expectLine = 0;
  let wakeAll: (() => void) | undefined;
  const watchers: Watcher[] = [];
  const onLine = (w: () => Watcher) => (now: number) => {
    if (w().lines !== expectLine) return; // only the line of the current event counts
    lat.push(now - t0);
    if (++got === opts.n) wakeAll?.();
  };
  const open0 = performance.now();
  const sessions = opts.protocol === 'h2' ? openH2(t, Math.ceil(opts.n / 100)) : [];
  const agent = opts.protocol === 'h1' ? new https.Agent({ keepAlive: false, maxSockets: Infinity, ca: t.tls.ca, cert: t.tls.cert, key: t.tls.key }) : undefined;
  try {
    // Open in batches so the TLS handshakes do not all land at once.
    for (let i = 0; i < opts.n; i += 50) {
      const batch = Array.from({ length: Math.min(50, opts.n - i) }, (_, k) => {
        const idx = i + k;
        const get = () => watchers[idx]!;
        return opts.protocol === 'h2'
          ? h2Watch(sessions[idx % sessions.length]!, opts.watchPath, onLine(get))
          : h1Watch(t, agent!, opts.watchPath, onLine(get));
      });
      const ws = await Promise.all(batch);
      ws.forEach((w, k) => (watchers[i + k] = w));
    }
    const openSeconds = (performance.now() - open0) / 1000;
    await sleep(opts.settleMs);
    const writeAgent = agentFor(t, 1);
    let missing = 0;
    for (let e = 0; e < opts.events; e++) {
      got = 0;
      expectLine = e + 1;
      const all = new Promise<void>((r) => (wakeAll = r));
      const req = opts.write(e);
      t0 = performance.now();
      const res = await request(t, writeAgent, req);
      if (res.status >= 300) throw new Error(`watch write ${req.method} ${req.path}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
      await Promise.race([all, sleep(10_000)]);
      missing += opts.n - got;
      // A watcher that missed this event would be counted against the next one: resynchronise.
      for (const w of watchers) if (w.lines < expectLine) w.lines = expectLine;
      await sleep(opts.gapMs);
    }
    writeAgent.destroy();
    return { watchers: opts.n, events: opts.events, lat, missing, openSeconds };
  } finally {
    for (const w of watchers) w?.close();
    for (const s of sessions) s.close();
    agent?.destroy();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface WatchContext {
  server: Target;
  floor: Target;
  serverAgent: https.Agent;
  serverPid: number;
  run: Run;
  watchers: number;
  rounds: number;
  events: number;
  settleMs: number;
  groupPath: string;
  ns: string;
  /** The object every write changes, and its stored JSON (the floor PUTs whole objects). */
  name0: string;
  object0: string;
  log(s: string): void;
}

export async function benchWatch(ctx: WatchContext): Promise<void> {
  const { run, log } = ctx;
  const collection = `${ctx.groupPath}/namespaces/${ctx.ns}/gittargets`;
  const base = JSON.parse(ctx.object0) as { metadata: { labels?: Record<string, string> } };
  let seq = 0;
  const once = async (side: 'server' | 'floor', protocol: 'h2' | 'h1'): Promise<FanoutResult> => {
    const rv = side === 'server' ? (JSON.parse((await request(ctx.server, ctx.serverAgent, { method: 'GET', path: `${collection}?limit=1` })).body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion : '';
    const tag = seq++;
    return fanout(side === 'server' ? ctx.server : ctx.floor, {
      n: ctx.watchers,
      protocol,
      watchPath: side === 'server' ? `${collection}?watch=true&resourceVersion=${rv}&timeoutSeconds=900` : '/floor/watch',
      settleMs: ctx.settleMs,
      gapMs: 100,
      events: ctx.events,
      write: (e): Req =>
        side === 'server'
          ? { method: 'PATCH', path: `${collection}/${ctx.name0}`, contentType: 'application/merge-patch+json', body: JSON.stringify({ metadata: { labels: { seq: `${protocol}-${tag}-${e}` } } }) }
          : { method: 'PUT', path: `/floor/obj/${ctx.ns}/${ctx.name0}`, body: JSON.stringify({ ...base, metadata: { ...base.metadata, labels: { ...base.metadata.labels, seq: `${protocol}-${tag}-${e}` } } }) },
    });
  };
  const runs = (xs: number[]) => xs.map((x) => fmt(x)).join('/');
  for (const protocol of ['h2', 'h1'] as const) {
    const res: Record<'server' | 'floor', FanoutResult[]> = { server: [], floor: [] };
    for (let r = 0; r < ctx.rounds; r++) {
      for (const side of r % 2 === 0 ? (['server', 'floor'] as const) : (['floor', 'server'] as const)) {
        const x = await once(side, protocol);
        res[side].push(x);
        log(`watch fan-out ${protocol} round ${r + 1} ${side}: opened ${x.watchers} in ${fmt(x.openSeconds, 1)} s; p50 ${fmt(quantile(x.lat, 0.5))} ms, p99 ${fmt(quantile(x.lat, 0.99))} ms, max ${fmt(Math.max(...x.lat))} ms, missing ${x.missing}`);
      }
    }
    const p = (side: 'server' | 'floor', q: number) => res[side].map((x) => quantile(x.lat, q));
    for (const side of ['server', 'floor'] as const) {
      run.samples(`${protocol} ${side} p99 ms`, p(side, 0.99));
      run.samples(`${protocol} ${side} p50 ms`, p(side, 0.5));
      run.samples(`${protocol} ${side} first watcher ms`, res[side].map((x) => Math.min(...x.lat)));
      run.samples(`${protocol} ${side} missing events`, res[side].map((x) => x.missing));
    }
    const s = spread(p('server', 0.99));
    const f = baselineSpread(p('floor', 0.99));
    const missing = res.server.reduce((a, x) => a + x.missing, 0);
    const missingFloor = res.floor.reduce((a, x) => a + x.missing, 0);
    run.row({
      metric: `watch fan-out p99, ${ctx.watchers.toLocaleString('en-US')} watchers, ${protocol === 'h2' ? 'HTTP/2 (100 streams per connection)' : 'HTTP/1.1 (one connection each)'}`,
      unit: 'ms',
      ...s,
      ...f,
      ratio: s.value / f.baseline,
      ratioStyle: 'times',
      target: '≤ 100 ms',
      met: s.value <= 100 && missing === 0,
      notes: `p99 of each round (${ctx.events} events × ${ctx.watchers} watchers; server and floor alternate going first); p50 ${fmt(median(p('server', 0.5)))} vs ${fmt(median(p('floor', 0.5)))} ms; events missing ${missing} vs ${missingFloor}`,
    });
    log(`watch fan-out ${protocol}: p99 server ${fmt(s.value)} ms (${runs(p('server', 0.99))}), floor ${fmt(f.baseline)} ms (${runs(p('floor', 0.99))})`);
  }
  const m = rssMiB(ctx.serverPid);
  run.note(`server RSS after the watch runs ${fmt((m.rss * 1048576) / 1e6, 0)} MB (peak ${fmt((m.hwm * 1048576) / 1e6, 0)} MB)`);
  run.write();
}
