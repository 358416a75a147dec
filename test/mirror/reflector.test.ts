// The source client's list+watch wrapper against a real server: our own configbutler.ai resources
// are a real list/watch API with pagination, bookmarks and 410 Gone (a short event-log retention).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { startServer, ns, gitTarget, freePort, type StartedServer } from '../support/server.js';
import { SourceClient, type SourceError } from '../../src/controllers/source/client.js';
import { Discovery, type ResolvedType } from '../../src/controllers/source/discovery.js';
import { Reflector, type StreamState } from '../../src/controllers/source/reflector.js';
import type { KubeObject } from '../../src/storage/types.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate } from '../../src/certs/pki.js';

let server: StartedServer;
let client: SourceClient;
let gittargets: ResolvedType;

async function until<T>(what: string, fn: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function create(namespace: string, name: string, v = 'a'): Promise<KubeObject> {
  const r = await server.request('POST', ns(namespace), { body: gitTarget(name, namespace, { labels: { v } }) });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** Labels are mutable; the label `v` stands for "the content changed". */
async function setV(namespace: string, name: string, v: string): Promise<KubeObject> {
  const r = await server.request('PATCH', `${ns(namespace)}/${name}`, { body: { metadata: { labels: { v } } }, contentType: 'application/merge-patch+json' });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Records everything a reflector hands over. */
function recorder(opts: { failOnce?: (type: string, o: KubeObject) => boolean } = {}) {
  const rec = {
    replaces: [] as Array<{ names: string[]; rv: string; initial: boolean }>,
    events: [] as string[],
    states: [] as StreamState[],
    failed: false,
    handlers: {
      replace(items: KubeObject[], rv: string, initial: boolean) {
        for (const it of items) assert.ok(it.apiVersion && it.kind, 'list items carry apiVersion and kind');
        rec.replaces.push({ names: items.map((i) => i.metadata.name!).sort(), rv, initial });
      },
      event(type: string, o: KubeObject) {
        if (!rec.failed && opts.failOnce?.(type, o)) {
          rec.failed = true;
          throw new Error('sink unavailable');
        }
        rec.events.push(`${type} ${o.metadata.name} ${o.metadata.labels?.v}`);
      },
      state(s: StreamState) {
        rec.states.push(s);
      },
    },
  };
  return rec;
}

before(async () => {
  // Bookmarks every second (the default is a minute): the resume-point test waits for one.
  server = await startServer(['--event-log-retention', '5', '--controllers=none', '--watch-bookmark-interval=1s']);
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfig);
  client = new SourceClient(kc);
  const res = await new Discovery(client).resolve({ group: 'configbutler.ai', resource: 'gittargets' });
  assert.ok(res.ok, JSON.stringify(res));
  gittargets = res.type;
});

after(async () => {
  client?.close();
  await server?.stop();
});

test('discovery: the preferred version when none is named; unknown types are answers, not errors', { timeout: 20_000 }, async () => {
  assert.deepEqual(gittargets, { group: 'configbutler.ai', version: 'v1alpha1', resource: 'gittargets', kind: 'GitTarget', namespaced: true });
  const d = new Discovery(client);
  assert.deepEqual(await d.resolve({ group: 'configbutler.ai', resource: 'widgets' }), { ok: false, message: 'the source serves no resource "widgets" in configbutler.ai/v1alpha1' });
  assert.deepEqual(await d.resolve({ group: 'configbutler.ai', version: 'v9', resource: 'gittargets' }), {
    ok: false,
    message: 'the source does not serve configbutler.ai/v9 (it serves configbutler.ai/v1alpha1)',
  });
  assert.deepEqual(await d.resolve({ group: 'nope.example.com', resource: 'things' }), { ok: false, message: 'the source serves no API group "nope.example.com"' });
});

test('paginated initial list, then events in order; bookmarks advance the resume point', { timeout: 30_000 }, async () => {
  for (const n of ['p1', 'p2', 'p3']) await create('pages', n);
  const rec = recorder();
  const r = new Reflector(client, gittargets, rec.handlers, { namespace: 'pages', pageSize: 2 });
  r.start();
  try {
    await until('initial list', () => rec.replaces.length === 1);
    assert.deepEqual(rec.replaces[0]!.names, ['p1', 'p2', 'p3']);
    assert.equal(rec.replaces[0]!.initial, true);
    await until('ready', () => rec.states.some((s) => s.phase === 'Ready'));
    await create('pages', 'p4');
    await setV('pages', 'p1', 'b');
    assert.equal((await server.request('DELETE', `${ns('pages')}/p2`)).status, 200);
    await until('three events', () => rec.events.length === 3);
    assert.deepEqual(rec.events, ['ADDED p4 a', 'MODIFIED p1 b', 'DELETED p2 a']);
    // A write elsewhere moves the store's RV; a bookmark carries it to this namespace's watcher.
    const other = await create('elsewhere', 'x');
    const otherRV = Number(other.metadata.resourceVersion);
    await until('bookmark', () => Number(r.resourceVersion) >= otherRV, 10_000);
    assert.equal(rec.replaces.length, 1, 'no re-list');
  } finally {
    await r.stop();
  }
});

test('a watch the server ends is resumed from the last RV, without a re-list or a lost event', { timeout: 30_000 }, async () => {
  await create('resume', 'r1');
  const rec = recorder();
  const r = new Reflector(client, gittargets, rec.handlers, { namespace: 'resume', watchTimeoutSeconds: 1 });
  r.start();
  try {
    await until('initial list', () => rec.replaces.length === 1);
    for (let i = 0; i < 6; i++) {
      await setV('resume', 'r1', `p${i}`);
      await new Promise((res) => setTimeout(res, 500));
    }
    await until('six events', () => rec.events.length === 6);
    assert.deepEqual(rec.events, [0, 1, 2, 3, 4, 5].map((i) => `MODIFIED r1 p${i}`));
    r.disconnect();
    await setV('resume', 'r1', 'after-drop');
    await until('event after a dropped connection', () => rec.events.length === 7);
    assert.equal(rec.events[6], 'MODIFIED r1 after-drop');
    assert.equal(rec.replaces.length, 1, 'resumed, never re-listed');
  } finally {
    await r.stop();
  }
});

test('a change the handler could not record is delivered again', { timeout: 30_000 }, async () => {
  await create('redeliver', 'd1');
  const rec = recorder({ failOnce: (type) => type === 'MODIFIED' });
  const r = new Reflector(client, gittargets, rec.handlers, { namespace: 'redeliver', backoffInitialMs: 50 });
  r.start();
  try {
    await until('initial list', () => rec.replaces.length === 1);
    await setV('redeliver', 'd1', 'x');
    await until('redelivered', () => rec.events.length === 1);
    assert.equal(rec.failed, true);
    assert.deepEqual(rec.events, ['MODIFIED d1 x']);
    assert.equal(rec.replaces.length, 1);
  } finally {
    await r.stop();
  }
});

test('410 Gone on resume re-lists and hands over the complete set', { timeout: 30_000 }, async () => {
  await create('gone', 'g0');
  const rec = recorder({ failOnce: (type) => type === 'ADDED' });
  // The failed handler holds the resume point back while more than the retained 5 events happen.
  const r = new Reflector(client, gittargets, rec.handlers, { namespace: 'gone', backoffInitialMs: 3000, backoffMaxMs: 3000 });
  r.start();
  try {
    await until('initial list', () => rec.replaces.length === 1);
    await create('gone', 'g1');
    await until('failure', () => rec.failed);
    for (let i = 2; i < 10; i++) await create('gone', `g${i}`);
    await until('re-list', () => rec.replaces.length === 2, 15_000);
    assert.equal(rec.replaces[1]!.initial, false);
    assert.deepEqual(rec.replaces[1]!.names, ['g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8', 'g9']);
    assert.deepEqual(rec.events, [], 'the missed events come as the re-list, not as events');
  } finally {
    await r.stop();
  }
});

test('failures are classified: unreachable, authentication failed', { timeout: 30_000 }, async () => {
  const port = await freePort();
  const kc = new KubeConfig();
  kc.loadFromFile(server.kubeconfig);
  const cluster = kc.getCurrentCluster()!;
  const dead = new KubeConfig();
  dead.loadFromOptions({
    clusters: [{ ...cluster, server: `https://127.0.0.1:${port}` }],
    users: [kc.getCurrentUser()!],
    contexts: [{ name: 'x', cluster: cluster.name, user: kc.getCurrentUser()!.name }],
    currentContext: 'x',
  });
  const anon = new KubeConfig();
  anon.loadFromOptions({ clusters: [cluster], users: [{ name: 'nobody' }], contexts: [{ name: 'x', cluster: cluster.name, user: 'nobody' }], currentContext: 'x' });
  for (const [kcfg, reason] of [
    [dead, 'Unreachable'],
    [anon, 'AuthenticationFailed'],
  ] as const) {
    const c = new SourceClient(kcfg);
    const rec = recorder();
    const r = new Reflector(c, gittargets, rec.handlers, { namespace: 'x', backoffInitialMs: 100 });
    r.start();
    try {
      const failing = await until('failure', () => rec.states.find((s) => s.phase === 'Failing') as { error: SourceError } | undefined);
      assert.equal(failing.error.reason, reason, failing.error.message);
      await assert.rejects(new Discovery(c).resolve({ group: '', resource: 'configmaps' }), (e: SourceError) => e.reason === reason);
    } finally {
      await r.stop();
      c.close();
    }
  }
});

test('403 is AccessDenied: an authenticated user without a grant', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reflector-rbac-'));
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: unused}\nrules: []\n');
  const rbac = await startServer(['--controllers=none', '--authorization-mode=RBAC', `--authorization-policy-file=${policy}`]);
  try {
    const certs = join(rbac.dataDir, 'certs');
    const ca = { certPem: readFileSync(join(certs, 'ca.crt'), 'utf8'), keyPem: readFileSync(join(certs, 'ca.key'), 'utf8') };
    const nobody = issueCertificate(ca, { commonName: 'nobody', usage: 'client' });
    const b64 = (x: string) => Buffer.from(x).toString('base64');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: rbac.url, caData: b64(ca.certPem), skipTLSVerify: false }],
      users: [{ name: 'nobody', certData: b64(nobody.certPem), keyData: b64(nobody.keyPem) }],
      contexts: [{ name: 'x', cluster: 'c', user: 'nobody' }],
      currentContext: 'x',
    });
    const c = new SourceClient(kc);
    const rec = recorder();
    const r = new Reflector(c, gittargets, rec.handlers, { namespace: 'x', backoffInitialMs: 100 });
    r.start();
    try {
      const failing = await until('failure', () => rec.states.find((s) => s.phase === 'Failing') as { error: SourceError } | undefined);
      assert.equal(failing.error.reason, 'AccessDenied', failing.error.message);
      assert.equal(failing.error.statusCode, 403);
    } finally {
      await r.stop();
      c.close();
    }
  } finally {
    await rbac.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
