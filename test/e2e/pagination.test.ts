// Pagination with 1,200 objects: kubectl get -A follows continue tokens (Table pages), direct
// clients page with limit/continue, a malformed token is 400, a token whose resourceVersion is no
// longer retained is 410 Expired.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { GV, TABLE_ACCEPT, gitTarget, ns, pool, startServer, type StartedServer } from '../support/server.js';

const RETENTION = 300;
const NAMESPACES = ['page-a', 'page-b', 'page-c'];
const PER_NAMESPACE = 400;
const TOTAL = NAMESPACES.length * PER_NAMESPACE;
const CONTINUE_TOO_OLD =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

let server: StartedServer;
let k: Kubectl;
const expected: string[] = [];

before(async () => {
  // 1,200 GitTargets, 400 per namespace: beyond the default quotas (docs/configuration.md#quotas).
  server = await startServer([`--event-log-retention=${RETENTION}`, '--max-gittargets-per-namespace=0', '--max-gittargets-per-cluster=0']);
  k = new Kubectl(kubectlBinary(), server.kubeconfig);
  const items = NAMESPACES.flatMap((n) => Array.from({ length: PER_NAMESPACE }, (_, i) => ({ n, name: `gt-${String(i).padStart(4, '0')}` })));
  await pool(items, 16, async ({ n, name }) => {
    const r = await server.request('POST', ns(n), { body: gitTarget(name, n, { labels: { page: 'yes' } }) });
    assert.equal(r.status, 201, r.text);
  });
  for (const { n, name } of items) expected.push(`${n}/${name}`);
  expected.sort();
});
after(async () => {
  k?.cleanup();
  await server?.stop();
});

async function pages(path: string, limit: number, accept = 'application/json'): Promise<{ keys: string[]; pages: any[] }> {
  const keys: string[] = [];
  const all: any[] = [];
  let cont = '';
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await server.get(`${path}${sep}limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, { accept });
    assert.equal(r.status, 200, r.text);
    all.push(r.body);
    const rows = accept === TABLE_ACCEPT ? r.body.rows.map((row: any) => row.object.metadata) : r.body.items.map((i: any) => i.metadata);
    for (const m of rows) keys.push(`${m.namespace}/${m.name}`);
    cont = r.body.metadata.continue ?? '';
    if (!cont) return { keys, pages: all };
  }
}

describe('pagination over 1,200 objects', () => {
  test('kubectl get gittargets -A shows all of them', async () => {
    const r = await k.run(['get', 'gittargets', '-A', '--no-headers']);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, TOTAL);
    const keys = lines.map((l) => {
      const [n, name] = l.split(/\s+/);
      return `${n}/${name}`;
    });
    assert.deepEqual(keys, expected);
    // With headers: one header line, then every row.
    const h = await k.run(['get', 'gittargets', '-A', '--chunk-size=97']);
    assert.equal(h.stderr, '');
    const hl = h.stdout.trimEnd().split('\n');
    assert.match(hl[0]!, /^NAMESPACE\s+NAME\s+READY/);
    assert.equal(hl.length, TOTAL + 1);
  });

  test('kubectl get -o name in one namespace, chunked', async () => {
    const r = await k.run(['get', 'gittargets', '-n', 'page-b', '-o', 'name', '--chunk-size=33']);
    assert.equal(r.stderr, '');
    const names = r.stdout.trimEnd().split('\n');
    assert.equal(names.length, PER_NAMESPACE);
    assert.equal(names[0], 'gittarget.configbutler.ai/gt-0000');
    assert.equal(names[PER_NAMESPACE - 1], `gittarget.configbutler.ai/gt-0${PER_NAMESPACE - 1}`);
  });

  test('limit/continue: pages of 100 give every object once, in order, with remainingItemCount', async () => {
    const { keys, pages: ps } = await pages(`${GV}/gittargets`, 100);
    assert.deepEqual(keys, expected);
    assert.equal(ps.length, TOTAL / 100);
    ps.forEach((p, i) => {
      assert.equal(p.kind, 'GitTargetList');
      assert.equal(p.items.length, 100);
      if (i < ps.length - 1) assert.equal(p.metadata.remainingItemCount, TOTAL - 100 * (i + 1));
      else {
        assert.equal(p.metadata.continue, undefined);
        assert.equal(p.metadata.remainingItemCount, undefined);
      }
      // Every page reports the resourceVersion of the first page.
      assert.equal(p.metadata.resourceVersion, ps[0].metadata.resourceVersion);
    });
  });

  test('Table pages carry continue and remainingItemCount (what kubectl follows)', async () => {
    const { keys, pages: ps } = await pages(ns('page-c'), 150, TABLE_ACCEPT);
    assert.deepEqual(keys, expected.filter((x) => x.startsWith('page-c/')));
    assert.equal(ps[0].kind, 'Table');
    assert.equal(ps[0].metadata.remainingItemCount, PER_NAMESPACE - 150);
    assert.ok(ps[0].metadata.continue);
  });

  test('label and field selectors combine with pagination', async () => {
    const { keys } = await pages(`${GV}/gittargets?labelSelector=page%3Dyes&fieldSelector=metadata.namespace%3Dpage-a`, 64);
    assert.deepEqual(keys, expected.filter((x) => x.startsWith('page-a/')));
  });

  test('a malformed continue token is 400 BadRequest', async () => {
    for (const bad of ['garbage', 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ', Buffer.from('{"v":"meta.k8s.io/v1","rv":-1,"start":""}').toString('base64url')]) {
      const r = await server.get(`${GV}/gittargets?limit=10&continue=${bad}`);
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'continue key is not valid: the token is malformed; start a new list without the continue parameter',
        reason: 'BadRequest',
        code: 400,
      });
    }
  });

  test('resourceVersion with continue is 422; resourceVersionMatch with continue is 422', async () => {
    const first = await server.get(`${GV}/gittargets?limit=10`);
    const cont = encodeURIComponent(first.body.metadata.continue);
    const a = await server.get(`${GV}/gittargets?limit=10&continue=${cont}&resourceVersion=5`);
    assert.equal(a.status, 422, a.text);
    assert.equal(a.body.reason, 'Invalid');
    assert.equal(a.body.message, 'ListOptions.meta.k8s.io "" is invalid: resourceVersion: Forbidden: specifying resource version is not allowed when using continue');
    const b = await server.get(`${GV}/gittargets?limit=10&continue=${cont}&resourceVersionMatch=NotOlderThan&resourceVersion=5`);
    assert.equal(b.status, 422, b.text);
    assert.match(b.body.message, /resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided/);
  });

  test('a continue token whose resourceVersion is no longer retained is 410 Expired', async () => {
    const first = await server.get(`${ns('page-a')}?limit=10`);
    assert.equal(first.status, 200);
    const cont = first.body.metadata.continue;
    // Still valid right away.
    const ok = await server.get(`${ns('page-a')}?limit=10&continue=${encodeURIComponent(cont)}`);
    assert.equal(ok.status, 200, ok.text);
    // Push the token's resourceVersion out of the retained history.
    const victims = Array.from({ length: RETENTION + 10 }, (_, i) => `gt-${String(i).padStart(4, '0')}`);
    await pool(victims, 16, async (name) => {
      const r = await server.request('PATCH', `${ns('page-b')}/${name}`, { contentType: 'application/merge-patch+json', body: { metadata: { labels: { touched: 'yes' } } } });
      assert.equal(r.status, 200, r.text);
    });
    const r = await server.get(`${ns('page-a')}?limit=10&continue=${encodeURIComponent(cont)}`);
    assert.equal(r.status, 410, r.text);
    assert.deepEqual(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: CONTINUE_TOO_OLD, reason: 'Expired', code: 410 });
    // A new list without the token works.
    const again = await pages(ns('page-a'), 250);
    assert.equal(again.keys.length, PER_NAMESPACE);
  });

  test(
    'a continued list is consistent with the first page (objects created after it do not appear)',
    async () => {
      const first = await server.get(`${ns('page-c')}?limit=5`);
      const cont = first.body.metadata.continue;
      const late = await server.request('POST', ns('page-c'), { body: gitTarget('zz-late', 'page-c') });
      assert.equal(late.status, 201, late.text);
      const { keys } = await (async () => {
        const r = await server.get(`${ns('page-c')}?limit=1000&continue=${encodeURIComponent(cont)}`);
        return { keys: r.body.items.map((i: any) => i.metadata.name) as string[] };
      })();
      assert.ok(!keys.includes('zz-late'), 'an object created after the first page appeared in a continued page');
    },
  );
});
