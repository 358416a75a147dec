// Controllers against a real Store (embedded on disk, or Redis) and a real `git http-backend`
// remote: GitTargets and CommitRequests are written to the Store as the registry stores them,
// changes enter through the WindowSink, and what was pushed is read back with the git CLI.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { createStore, type KubeObject, type Store } from '../../src/storage/index.js';
import { startControllers, type RunningControllers } from '../../src/controllers/index.js';
import { parseControllers } from '../../src/controllers/names.js';
import { GitWorker, type GitWorkerOptions } from '../../src/git/worker.js';
import { createLogger } from '../../src/metrics/logger.js';
import type { TargetKey } from '../../src/controllers/windows/types.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import type { AttributionConfig } from '../../src/attribution/join.js';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { Clock } from '../../src/controllers/runtime/clock.js';
import type { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';

export const GT = { group: 'configbutler.ai', resource: 'gittargets' };
export const CR = { group: 'configbutler.ai', resource: 'commitrequests' };
export const COMMITTER = { name: 'Reverser Bot', email: 'bot@reverser.example' };

export function tempDir(t: TestContext, prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

export async function gitServer(t: TestContext, repo = 'config'): Promise<GitServer> {
  const s = await startGitServer();
  t.after(() => s.close());
  s.createBareRepo(repo);
  return s;
}

/** The remote's basic-auth credentials as a Secret in the Store (core group), as the sandbox keeps them. */
export async function createGitSecret(store: Store, s: GitServer, name = 'git-creds', namespace = 'team-a'): Promise<void> {
  const b64 = (v: string) => Buffer.from(v).toString('base64');
  await store.create({ group: '', resource: 'secrets' }, { cluster: '_', namespace, name }, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, uid: randomUUID() },
    data: { username: b64(s.username), password: b64(s.password) },
  });
}

export interface Harness {
  store: Store;
  running: RunningControllers;
  engine: GitWorker;
  stop(): Promise<void>;
}

export async function startHarness(
  t: TestContext,
  opts: {
    dataDir: string;
    store?: Store;
    holder?: string;
    leaseTtlMs?: number;
    requestGraceMs?: number;
    controllers?: string;
    attribution?: AttributionConfig;
    metrics?: MetricsRegistry;
    /** Receives every log line (JSON) at level info and above, besides TEST_LOG. */
    logLines?: (line: string) => void;
    engine?: Partial<GitWorkerOptions>;
    /** The controllers' clock (default: the wall clock); test/support/clock.ts ManualClock drives windows by hand. */
    clock?: Clock;
    /** The mirror's default source cluster (e.g. a sandbox's kubeconfig, test/mirror/harness.ts); none by default. With it, the mirror accepts http:// remotes with credentials, as the engine here does. */
    defaultSource?: KubeConfig;
    /** The windows controller's lost wake-up check (src/controllers/windows/resync.ts). */
    windowsResyncMs?: number;
  },
): Promise<Harness> {
  const store = opts.store ?? (await createStore({ storage: 'embedded', dataDir: opts.dataDir }));
  // As the server configures it (cli/serve.ts): network failures are reported by their first attempt.
  const engine = new GitWorker({ allowInsecureCredentials: true, dataDir: opts.dataDir, committerName: COMMITTER.name, committerEmail: COMMITTER.email, lease: store, retryTimeoutMs: 10_000, unreachableRetryMs: 0, ...opts.engine });
  const lines = opts.logLines;
  const log = lines
    ? createLogger('info', (l) => {
        lines(l);
        if (process.env.TEST_LOG) process.stderr.write(l);
      })
    : createLogger(process.env.TEST_LOG ? 'debug' : 'error');
  const running = await startControllers(
    { store, log, engine: async () => engine, committer: COMMITTER, holder: opts.holder, leaseTtlMs: opts.leaseTtlMs, requestGraceMs: opts.requestGraceMs, attribution: opts.attribution, metrics: opts.metrics, clock: opts.clock, windowsResyncMs: opts.windowsResyncMs, ...(opts.defaultSource ? { defaultSource: opts.defaultSource, tenantInput: { allowInsecureCredentials: true } } : {}) },
    parseControllers(opts.controllers ?? 'all'),
  );
  let stopped = false;
  const h: Harness = {
    store,
    running,
    engine,
    async stop() {
      if (stopped) return;
      stopped = true;
      await running.stop();
      await engine.close();
      await store.close();
    },
  };
  t.after(() => h.stop());
  return h;
}

export async function createGitTarget(store: Store, name: string, url: string, commit: Record<string, unknown> = {}, ready = true, namespace = 'team-a'): Promise<{ obj: KubeObject; key: TargetKey }> {
  const uid = randomUUID();
  const obj: KubeObject = {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace, uid, generation: 1, creationTimestamp: new Date().toISOString() },
    // With the schema's defaults, as the registry stores every GitTarget: the controllers' status
    // writes go through the registry, which would otherwise default (change) the spec.
    spec: { repository: { url, secretRef: { name: 'git-creds' } }, branch: 'main', path: 'clusters/dev', commit: { idleSeconds: 1, maxAgeSeconds: 600, mode: 'Auto', ...commit }, prune: { mode: 'OnEvent' }, includeClusterNoise: false, suspend: false },
    ...(ready ? { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: new Date().toISOString() }] } } : {}),
  };
  const stored = await store.create(GT, { cluster: '_', namespace, name }, obj);
  return { obj: stored, key: { cluster: '_', namespace, name, uid } };
}

export async function createCommitRequest(
  store: Store,
  name: string,
  target: string,
  spec: Record<string, unknown>,
  submitter: Record<string, unknown> = { username: 'alice' },
  namespace = 'team-a',
): Promise<KubeObject> {
  return store.create(
    CR,
    { cluster: '_', namespace, name },
    {
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'CommitRequest',
      metadata: { name, namespace, uid: randomUUID(), generation: 1, creationTimestamp: new Date().toISOString() },
      spec: { targetRef: { name: target }, closeDelaySeconds: 0, ttlSecondsAfterFinished: 3600, ...spec }, // the schema's defaults, as the registry stores it
      status: { submitter },
    },
  );
}

export function configMap(name: string, data: Record<string, string>, namespace = 'team-a') {
  return { op: 'write' as const, resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a value (not undefined/false) or the deadline passes. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}

export function readyOf(obj: KubeObject | undefined): { status?: string; reason?: string; message?: string } | undefined {
  return ((obj?.status as { conditions?: Array<Record<string, string>> } | undefined)?.conditions ?? []).find((c) => c.type === 'Ready');
}
