// The attack run (`npm run bench -- attack [--quick] [--only=cardinality,idle,patch,nesting]`):
// starts the built server (embedded storage, dev PKI, AlwaysAllow) and runs the pre-authentication
// and patch attacks of docs/security.md against it, one after the other. For each it prints, before, during
// and after the attack: the number of metric series, the server's RSS and open file descriptors,
// the event-loop delay (prom-client's monitorEventLoopDelay gauges, reset at every scrape) and the
// latency of /healthz from a separate client. Each attack's raw samples are written to
// bench/results/ (attack.<name>); the tables in docs/security.md are still copied by hand.
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanup, freePort, rssMiB, startChild, tempDir } from '../common/proc.js';
import { beginRun, type Run } from '../common/results.js';
import { h2request } from '../../test/security/http-support.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const want = (s: string) => !only || only.includes(s);
const IDLE_TIMEOUT_S = Number(argv.find((a) => a.startsWith('--idle-timeout='))?.slice(15) ?? 10);
// `--server-main=PATH --legacy` runs the same attacks against another build (e.g. one from before
// the defences, which knows none of the connection flags) for a before/after comparison.
const legacy = argv.includes('--legacy');
const count = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const P = quick
  ? { cardinality: 5_000, idlePerKind: 300, patches: 10, nested: 50, phaseMs: 1_000 }
  : { cardinality: 20_000, idlePerKind: 1_000, patches: 30, nested: 200, phaseMs: 2_000 };
for (const k of ['cardinality', 'idlePerKind', 'patches', 'nested'] as const) if (count(k)) P[k] = Number(count(k));
const GV = '/apis/configbutler.ai/v1alpha1';
const MAIN = count('server-main') ?? join(fileURLToPath(new URL('.', import.meta.url)), '../../src/cli/main.js');

interface Sample {
  series: number;
  rssMiB: number;
  fds: number;
  loopMaxMs: number;
  loopP99Ms: number;
}
interface Phase {
  name: string;
  samples: Sample[];
  healthzMs: number[];
}

/**
 * An HTTP/2 client that reconnects: the server closes sessions idle for longer than the idle
 * timeout (GOAWAY), as kube-apiserver does; Go's client reconnects on its own, node's does not.
 */
function reconnecting(url: string, opts: object): { request: (method: string, path: string, o?: Parameters<typeof h2request>[3]) => ReturnType<typeof h2request>; close(): void } {
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

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

async function main(): Promise<void> {
  const dataDir = tempDir('reverser-attack-');
  try {
    const port = await freePort();
    const server = await startChild(
      'reverser server',
      process.execPath,
      [MAIN, 'serve', '--data-dir', dataDir, '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--log-level=warn',
        ...(legacy ? [] : [`--idle-connection-timeout=${IDLE_TIMEOUT_S}`, `--tls-handshake-timeout=${IDLE_TIMEOUT_S}`])],
      /kubectl --kubeconfig/,
    );
    const certs = join(dataDir, 'certs');
    const ca = readFileSync(join(certs, 'ca.crt'), 'utf8');
    const admin = { ca, cert: readFileSync(join(certs, 'admin.crt'), 'utf8'), key: readFileSync(join(certs, 'admin.key'), 'utf8') };
    const url = `https://127.0.0.1:${port}`;
    const scraper = reconnecting(url, admin);
    const pinger = reconnecting(url, admin);
    const writer = reconnecting(url, admin);
    console.log(`attack run: server pid ${server.pid} on :${port} (${MAIN}${legacy ? ', legacy flags' : ''}), node ${process.version}, ${quick ? 'quick' : 'full'}, idle timeout ${IDLE_TIMEOUT_S} s`);

    const alive = () => server.proc.exitCode === null && server.proc.signalCode === null;
    const sample = async (): Promise<Sample> => {
      if (server.proc.exitCode !== null || server.proc.signalCode !== null) return { series: NaN, rssMiB: NaN, fds: NaN, loopMaxMs: NaN, loopP99Ms: NaN };
      const text = (await scraper.request('GET', '/metrics', { timeoutMs: 120_000 }).catch(() => ({ text: '' }))).text;
      const gauge = (n: string) => Number(new RegExp(`^${n} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
      return {
        // GC-duration series appear once per kind of GC (a fixed set) whenever one first runs.
        series: text.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('nodejs_gc_duration_seconds')).length,
        rssMiB: alive() ? rssMiB(server.pid).rss : NaN,
        fds: alive() ? readdirSync(`/proc/${server.pid}/fd`).length : NaN,
        loopMaxMs: gauge('nodejs_eventloop_lag_max_seconds'),
        loopP99Ms: gauge('nodejs_eventloop_lag_p99_seconds'),
      };
    };

    // A phase samples the server every 250 ms and pings /healthz every 20 ms until `until` settles.
    const phase = async (name: string, until: Promise<unknown> | number): Promise<Phase> => {
      const p: Phase = { name, samples: [], healthzMs: [] };
      let running = true;
      const pings = (async () => {
        while (running && alive()) {
          const r = await pinger.request('GET', '/healthz', { timeoutMs: 120_000 }).catch(() => undefined);
          if (r) p.healthzMs.push(r.ms);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const samples = (async () => {
        await sample(); // resets the event-loop histogram: each phase reports its own delay
        while (running) {
          await new Promise((r) => setTimeout(r, 250));
          p.samples.push(await sample());
        }
      })();
      await (typeof until === 'number' ? new Promise((r) => setTimeout(r, until)) : until);
      running = false;
      await Promise.all([pings, samples]);
      return p;
    };

    const report = (title: string, phases: Phase[], note: string) => {
      console.log(`\n## ${title}\n${note}\n`);
      console.log('| phase | metric series (without GC kinds) | RSS MiB | open fds | event-loop delay max / p99 (ms) | /healthz p50 / max (ms) |');
      console.log('|---|---:|---:|---:|---:|---:|');
      for (const p of phases) {
        const last = p.samples.at(-1);
        const maxOf = (f: (s: Sample) => number) => Math.max(...p.samples.map(f));
        console.log(
          `| ${p.name} | ${last?.series ?? '-'} | ${last ? last.rssMiB.toFixed(0) : '-'} (max ${maxOf((s) => s.rssMiB).toFixed(0)}) | ${last?.fds ?? '-'} (max ${maxOf((s) => s.fds)}) | ` +
            `${maxOf((s) => s.loopMaxMs).toFixed(1)} / ${maxOf((s) => s.loopP99Ms).toFixed(1)} | ${quantile(p.healthzMs, 0.5).toFixed(1)} / ${Math.max(...p.healthzMs).toFixed(1)} |`,
        );
      }
    };

    const run = async (title: string, note: string, attack: () => Promise<string>, afterMs = P.phaseMs) => {
      const slug = title.replace(/^\d+\.\s*/, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
      const rec = beginRun({ bench: 'attack', scenario: `attack.${slug}`, title, columns: { value: 'during / after', baseline: 'before' }, order: Number(/^(\d+)/.exec(title)?.[1] ?? 0), params: { ...P, quick, legacy, idleTimeoutSeconds: IDLE_TIMEOUT_S } });
      const before = await phase('before', P.phaseMs);
      let outcome = '';
      const during = await phase('during', attack().then((o) => (outcome = o)));
      const after = await phase('after', afterMs);
      report(title, [before, during, after], `${note}\nOutcome: ${outcome}`);
      record(rec, title, [before, during, after], outcome);
    };

    // Warm-up: the label combinations an anonymous request reaches, and the scrape's own series.
    const warm = reconnecting(url, { ca });
    for (let i = 0; i < 200; i++) await warm.request('GET', `${GV}/namespaces/x/warm-${i}`);
    warm.close();
    await sample();

    if (want('cardinality')) {
      await run('1. Metrics label cardinality', `${P.cardinality.toLocaleString('en')} anonymous GETs of \`${GV}/namespaces/x/<1,000 random hex characters>\` (64 in flight on 4 HTTP/2 connections).`, async () => {
        const sessions = Array.from({ length: 4 }, () => reconnecting(url, { ca }));
        const codes = new Map<number, number>();
        let next = 0;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: 64 }, async (_, w) => {
            while (next < P.cardinality) {
              next++;
              const r = await sessions[w % 4]!.request('GET', `${GV}/namespaces/x/${randomBytes(500).toString('hex')}`, { timeoutMs: 60_000 });
              codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
            }
          }),
        );
        sessions.forEach((s) => s.close());
        return `${[...codes].map(([c, n]) => `${n} × ${c}`).join(', ')} in ${((performance.now() - started) / 1000).toFixed(1)} s`;
      });
    }

    if (want('idle')) {
      const kinds = ['tcp', 'h2-preface', 'tls-silent'] as const;
      const sockets: Socket[] = [];
      await run(
        '2. Idle connections',
        `${P.idlePerKind} each of: TCP connections that send nothing, TLS+HTTP/2 sessions that send only the preface and SETTINGS, TLS connections (HTTP/1.1) that send nothing; held open by the attacker. \`--idle-connection-timeout=${IDLE_TIMEOUT_S} --tls-handshake-timeout=${IDLE_TIMEOUT_S}\`; "during" lasts until the server has closed them all.`,
        async () => {
          const closed: Promise<number>[] = [];
          const started = Date.now();
          for (const kind of kinds) {
            await Promise.all(
              Array.from({ length: P.idlePerKind }, () =>
                new Promise<void>((resolve) => {
                  let s: Socket;
                  const opened = () => resolve();
                  if (kind === 'tcp') s = tcpConnect({ host: '127.0.0.1', port }, opened);
                  else {
                    s = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: [kind === 'h2-preface' ? 'h2' : 'http/1.1'] }, () => {
                      if (kind === 'h2-preface') s.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
                      opened();
                    });
                  }
                  s.on('error', () => resolve());
                  s.on('data', () => {});
                  closed.push(new Promise((r) => s.once('close', () => r(Date.now() - started))));
                  sockets.push(s);
                }),
              ),
            );
          }
          const legit = await writer.request('GET', `${GV}/namespaces/default/gittargets`, { timeoutMs: 30_000 });
          // Wait for the server to close them, but not forever (a server without the defence never does).
          const waitS = IDLE_TIMEOUT_S + 30;
          const times = await Promise.all(closed.map((c) => Promise.race([c, new Promise<number>((r) => setTimeout(() => r(Infinity), waitS * 1000))])));
          const open = times.filter((t) => t === Infinity).length;
          const last = Math.max(...times.filter((t) => t !== Infinity));
          return `${sockets.length} connections opened; a legitimate list meanwhile answered ${legit.status} in ${legit.ms.toFixed(0)} ms; ` +
            (open ? `${open} still open after ${waitS} s (the attacker let go then)` : `the server closed the last one after ${(last / 1000).toFixed(1)} s`);
        },
      );
      sockets.forEach((s) => s.destroy());
    }

    if (want('patch')) {
      const ops: unknown[] = [{ op: 'add', path: '/metadata/annotations', value: { seed: 'x'.repeat(1024) } }];
      for (let i = 0; i < 30; i++) ops.push({ op: 'copy', from: '/metadata', path: `/metadata/annotations/c${i}` });
      const body = JSON.stringify(ops);
      const target = { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'amp' }, spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: '.' } };
      await writer.request('POST', `${GV}/namespaces/default/gittargets`, { body: JSON.stringify(target) });
      await run(
        '3. JSON-patch amplification',
        `${P.patches} × the ${body.length}-byte JSON patch (one 1 KiB \`add\`, then 30 \`copy\` of /metadata into its annotations) with \`dryRun=All\`, 3 in flight.`,
        async () => {
          const codes = new Map<number | string, number>();
          const ms: number[] = [];
          let next = 0;
          await Promise.all(
            Array.from({ length: 3 }, async () => {
              while (next < P.patches) {
                next++;
                const started = performance.now();
                const r = await writer.request('PATCH', `${GV}/namespaces/default/gittargets/amp?dryRun=All`, { body, contentType: 'application/json-patch+json', timeoutMs: 180_000 }).catch((e) => ({ status: `error (${(e as Error).message.slice(0, 60)})`, ms: performance.now() - started }));
                codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
                ms.push(r.ms);
              }
            }),
          );
          return `${[...codes].map(([c, n]) => `${n} × ${c}`).join(', ')}; each answered in p50 ${quantile(ms, 0.5).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms`;
        },
      );
    }

    if (want('nesting')) {
      const depth = 10_000;
      const merge = `{"metadata":{"annotations":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`;
      const yaml = `kind: GitTarget\nspec: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
      await run(
        '4. Deep nesting',
        `${P.nested} merge patches nested ${depth.toLocaleString('en')} deep (${(merge.length / 1024).toFixed(0)} KiB) and ${P.nested} YAML creates with ${depth.toLocaleString('en')} nested flow sequences, 4 in flight.`,
        async () => {
          const codes = new Map<string, number>();
          let next = 0;
          await Promise.all(
            Array.from({ length: 4 }, async () => {
              while (next < 2 * P.nested) {
                const i = next++;
                const r = await (i % 2 === 0
                  ? writer.request('PATCH', `${GV}/namespaces/default/gittargets/amp`, { body: merge, contentType: 'application/merge-patch+json', timeoutMs: 120_000 })
                  : writer.request('POST', `${GV}/namespaces/default/gittargets`, { body: yaml, contentType: 'application/yaml', timeoutMs: 120_000 })
                ).catch((e) => ({ status: 'error', body: { reason: (e as Error).message.slice(0, 60) } }));
                const k = `${r.status} ${r.body?.reason ?? ''}`;
                codes.set(k, (codes.get(k) ?? 0) + 1);
              }
            }),
          );
          return [...codes].map(([c, n]) => `${n} × ${c}`).join(', ');
        },
      );
    }

    console.log(`\nserver still running at the end: ${alive() ? 'yes' : `no (exit ${server.proc.exitCode ?? server.proc.signalCode}): ${server.output().split('\n').filter((l) => /FATAL|heap|Error/.test(l)).slice(0, 2).join(' / ')}`}`);
    [scraper, pinger, writer].forEach((s) => s.close());
  } finally {
    await cleanup([dataDir]);
  }
}

/** The attack's raw samples and a summary (RSS, /healthz, event-loop delay: during and after against before) as a results record. */
function record(rec: Run, title: string, phases: Phase[], outcome: string): void {
  const [before, during, after] = phases as [Phase, Phase, Phase];
  for (const p of phases) {
    rec.samples(`${p.name} RSS MiB`, p.samples.map((s) => s.rssMiB));
    rec.samples(`${p.name} open fds`, p.samples.map((s) => s.fds));
    rec.samples(`${p.name} metric series`, p.samples.map((s) => s.series));
    rec.samples(`${p.name} event-loop delay max ms`, p.samples.map((s) => s.loopMaxMs));
    rec.samples(`${p.name} /healthz ms`, p.healthzMs);
  }
  const max = (p: Phase, f: (s: Sample) => number) => Math.max(...p.samples.map(f));
  const name = title.replace(/^\d+\.\s*/, '');
  rec.row({ metric: `${name}: /healthz max, during vs before`, unit: 'ms', value: Math.max(...during.healthzMs), baseline: Math.max(...before.healthzMs), notes: `p50 ${quantile(during.healthzMs, 0.5).toFixed(1)} vs ${quantile(before.healthzMs, 0.5).toFixed(1)} ms` });
  rec.row({ metric: `${name}: event-loop delay max, during vs before`, unit: 'ms', value: max(during, (s) => s.loopMaxMs), baseline: max(before, (s) => s.loopMaxMs) });
  rec.row({ metric: `${name}: server RSS, after vs before`, unit: 'MiB', value: after.samples.at(-1)?.rssMiB ?? NaN, baseline: before.samples.at(-1)?.rssMiB ?? NaN, notes: `max during ${max(during, (s) => s.rssMiB).toFixed(0)} MiB; open fds after ${after.samples.at(-1)?.fds ?? '?'} vs before ${before.samples.at(-1)?.fds ?? '?'}; metric series after ${after.samples.at(-1)?.series ?? '?'} vs before ${before.samples.at(-1)?.series ?? '?'}` });
  rec.note(`outcome: ${outcome}`);
  rec.write();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
