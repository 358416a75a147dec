// The pre-authentication and patch attacks (security review of the HTTP surface): metric label
// cardinality, idle connections, JSON-patch amplification, deep nesting.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Attack, type Params, quantile } from './harness.js';

const GV = '/apis/configbutler.ai/v1alpha1';

const counts = (p: Params) => {
  const c = p.quick ? { cardinality: 5_000, idlePerKind: 300, patches: 10, nested: 50 } : { cardinality: 20_000, idlePerKind: 1_000, patches: 30, nested: 200 };
  for (const k of Object.keys(c) as Array<keyof typeof c>) if (p.arg(k)) c[k] = Number(p.arg(k));
  return c;
};
const idleTimeout = (p: Params) => Number(p.arg('idle-timeout') ?? 10);

export const httpAttacks: Attack[] = [
  {
    key: 'cardinality',
    order: 1,
    title: 'Metrics label cardinality',
    anonymous: true,
    params: (p) => ({ requests: counts(p).cardinality }),
    note: (p) => `${counts(p).cardinality.toLocaleString('en')} ${p.tenant ? "GETs with the tenant's client certificate" : 'anonymous GETs'} of \`${GV}/namespaces/x/<1,000 random hex characters>\` (64 in flight on 4 HTTP/2 connections, from a process of its own).`,
    async run(ctx) {
      // The attacker runs in a process of its own (flood-client.ts): its requests and their
      // answers on this process's event loop would otherwise delay the bystander's /healthz timings.
      const dir = mkdtempSync(join(tmpdir(), 'reverser-flood-'));
      const specFile = join(dir, 'spec.json');
      writeFileSync(specFile, JSON.stringify({ url: ctx.url, total: counts(ctx.params).cardinality, inFlight: 64, sessions: 4, tls: ctx.attackerTLS }), { mode: 0o600 });
      const child = spawn(process.execPath, [fileURLToPath(new URL('./flood-client.js', import.meta.url)), specFile], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (c: string) => (out += c));
      await new Promise<void>((resolve) => child.once('exit', () => resolve()));
      rmSync(dir, { recursive: true, force: true });
      const m = /done (\{.*\}) ([\d.]+)/.exec(out);
      if (!m) throw new Error(`the flood client ended without a result: ${out.slice(-500)}`);
      const codes = JSON.parse(m[1]!) as Record<string, number>;
      return { text: `${Object.entries(codes).map(([c, n]) => `${n} × ${c}`).join(', ')} in ${m[2]} s` };
    },
  },
  {
    key: 'idle',
    order: 2,
    title: 'Idle connections',
    anonymousOnly: true,
    params: (p) => ({ idlePerKind: counts(p).idlePerKind, idleTimeoutSeconds: idleTimeout(p) }),
    note: (p) =>
      `${counts(p).idlePerKind} each of: TCP connections that send nothing, TLS+HTTP/2 sessions that send only the preface and SETTINGS, TLS connections (HTTP/1.1) that send nothing; held open by the attacker (a process of its own, one loopback address per kind). \`--idle-connection-timeout=${idleTimeout(p)} --tls-handshake-timeout=${idleTimeout(p)}\`; "during" lasts until the server has closed them all.`,
    async run(ctx) {
      // The attacker runs in a process of its own (idle-client.ts): its client-side handshakes on
      // this process's event loop would otherwise delay the /healthz timings of the bystander.
      const dir = mkdtempSync(join(tmpdir(), 'reverser-idle-'));
      const caFile = join(dir, 'ca.crt');
      writeFileSync(caFile, ctx.ca);
      // Wait for the server to close them, but not forever (a server without the defence never does).
      const waitS = idleTimeout(ctx.params) + 30;
      const child = spawn(process.execPath, [fileURLToPath(new URL('./idle-client.js', import.meta.url)), String(ctx.port), String(counts(ctx.params).idlePerKind), caFile, String(waitS)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      const opened = new Promise<void>((resolve) => child.stdout.on('data', (c: string) => ((out += c), /opened \d+/.test(out) && resolve())));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await Promise.race([opened, exited]);
      const legit = await ctx.writer.request('GET', `${GV}/namespaces/default/gittargets`, { timeoutMs: 30_000 });
      await exited;
      rmSync(dir, { recursive: true, force: true });
      const times = (JSON.parse(/closed (.*)/.exec(out)?.[1] ?? '[]') as Array<number | null>).map((t) => t ?? Infinity);
      const open = times.filter((t) => t === Infinity).length;
      const last = Math.max(...times.filter((t) => t !== Infinity));
      return {
        text:
          `${/opened (\d+)/.exec(out)?.[1] ?? '?'} connections opened; a legitimate list meanwhile answered ${legit.status} in ${legit.ms.toFixed(0)} ms; ` +
          (open ? `${open} still open after ${waitS} s (the attacker let go then)` : `the server closed the last one after ${(last / 1000).toFixed(1)} s`),
      };
    },
  },
  {
    key: 'patch',
    order: 3,
    title: 'JSON-patch amplification',
    params: (p) => ({ patches: counts(p).patches }),
    async prepare(ctx) {
      const target = { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'amp' }, spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: '.' } };
      await ctx.writer.request('POST', `${GV}/namespaces/default/gittargets`, { body: JSON.stringify(target) });
    },
    note: (p) => `${counts(p).patches} × the ${amplifyingPatch().length}-byte JSON patch (one 1 KiB \`add\`, then 30 \`copy\` of /metadata into its annotations) with \`dryRun=All\`, 3 in flight.`,
    async run(ctx) {
      const body = amplifyingPatch();
      const total = counts(ctx.params).patches;
      const codes = new Map<number | string, number>();
      const ms: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 3 }, async () => {
          while (next < total) {
            next++;
            const started = performance.now();
            const r = await ctx.writer
              .request('PATCH', `${GV}/namespaces/default/gittargets/amp?dryRun=All`, { body, contentType: 'application/json-patch+json', timeoutMs: 180_000 })
              .catch((e) => ({ status: `error (${(e as Error).message.slice(0, 60)})`, ms: performance.now() - started }));
            codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
            ms.push(r.ms);
          }
        }),
      );
      return { text: `${[...codes].map(([c, n]) => `${n} × ${c}`).join(', ')}; each answered in p50 ${quantile(ms, 0.5).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms` };
    },
  },
  {
    key: 'nesting',
    order: 4,
    title: 'Deep nesting',
    params: (p) => ({ nested: counts(p).nested }),
    note: (p) => `${counts(p).nested} merge patches nested 10,000 deep (59 KiB) and ${counts(p).nested} YAML creates with 10,000 nested flow sequences, 4 in flight.`,
    async run(ctx) {
      const depth = 10_000;
      const merge = `{"metadata":{"annotations":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`;
      const yaml = `kind: GitTarget\nspec: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
      const total = 2 * counts(ctx.params).nested;
      const codes = new Map<string, number>();
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < total) {
            const i = next++;
            const r = await (i % 2 === 0
              ? ctx.writer.request('PATCH', `${GV}/namespaces/default/gittargets/amp`, { body: merge, contentType: 'application/merge-patch+json', timeoutMs: 120_000 })
              : ctx.writer.request('POST', `${GV}/namespaces/default/gittargets`, { body: yaml, contentType: 'application/yaml', timeoutMs: 120_000 })
            ).catch((e) => ({ status: 'error', body: { reason: (e as Error).message.slice(0, 60) } }));
            const k = `${r.status} ${r.body?.reason ?? ''}`;
            codes.set(k, (codes.get(k) ?? 0) + 1);
          }
        }),
      );
      return { text: [...codes].map(([c, n]) => `${n} × ${c}`).join(', ') };
    },
  },
];

function amplifyingPatch(): string {
  const ops: unknown[] = [{ op: 'add', path: '/metadata/annotations', value: { seed: 'x'.repeat(1024) } }];
  for (let i = 0; i < 30; i++) ops.push({ op: 'copy', from: '/metadata', path: `/metadata/annotations/c${i}` });
  return JSON.stringify(ops);
}
