// Server-side apply over HTTPS: PATCH application/apply-patch+yaml with
// fieldManager and force, on the main resource and on status; managedFields on every write path;
// the exact 409 a conflict answers. Exact Status bodies and exact fieldsV1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GROUP, VERSION, assertStatus, gitTarget, ns, startServer, type Response, type StartedServer } from '../support/server.js';

let server: StartedServer;
before(async () => {
  // API semantics only: no controller writes status behind the test's back.
  server = await startServer(['--controllers=none']);
});
after(() => server?.stop());

const GV = `${GROUP}/${VERSION}`;
const apply = (path: string, body: unknown, query: string) =>
  server.request('PATCH', `${path}${query}`, { contentType: 'application/apply-patch+yaml', body: typeof body === 'string' ? body : JSON.stringify(body) });
const merge = (path: string, body: unknown, query = '') => server.request('PATCH', `${path}${query}`, { contentType: 'application/merge-patch+json', body });

/** managedFields without their times, for exact comparison. */
function managed(r: Response): unknown[] {
  assert.ok(r.status < 300, `${r.status} ${r.text}`);
  return (r.body.metadata.managedFields ?? []).map((e: any) => {
    assert.match(e.time ?? '2000-01-01T00:00:00Z', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const { time: _t, ...rest } = e;
    return rest;
  });
}

const entry = (manager: string, operation: 'Apply' | 'Update', fieldsV1: unknown, subresource?: string) => ({
  manager,
  operation,
  apiVersion: GV,
  fieldsType: 'FieldsV1',
  fieldsV1,
  ...(subresource ? { subresource } : {}),
});

describe('apply on the main resource', () => {
  const P = `${ns('ssa')}/demo`;
  const config = (spec: Record<string, unknown> = {}) => gitTarget('demo', 'ssa', { spec: { suspend: true, ...spec } });
  let rv = '';

  test('79: without fieldManager → 422', async () => {
    assertStatus(await apply(P, config(), ''), 422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
  });

  test('80: apply on a missing object creates it (201), owned by the applier', async () => {
    const r = await apply(P, config(), '?fieldManager=mgr-a');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.suspend, true);
    assert.equal(r.body.spec.commit.idleSeconds, 5, 'defaults are applied but owned by nobody');
    assert.deepEqual(managed(r), [
      entry('mgr-a', 'Apply', { 'f:spec': { 'f:branch': {}, 'f:path': {}, 'f:repository': { 'f:url': {} }, 'f:suspend': {} } }),
    ]);
    rv = r.body.metadata.resourceVersion;
  });

  test('82: the same apply again → 200, resourceVersion unchanged', async () => {
    const r = await apply(P, config(), '?fieldManager=mgr-a');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.metadata.resourceVersion, rv);
  });

  test('81: another manager changing an owned field → 409 naming field and manager; force takes it', async () => {
    const other = { apiVersion: GV, kind: 'GitTarget', metadata: { name: 'demo', namespace: 'ssa' }, spec: { suspend: false } };
    const r = await apply(P, other, '?fieldManager=mgr-b');
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(r.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Apply failed with 1 conflict: conflict with "mgr-a": .spec.suspend',
      reason: 'Conflict',
      details: { causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "mgr-a"', field: '.spec.suspend' }] },
      code: 409,
    });
    assert.equal((await server.get(P)).body.metadata.resourceVersion, rv, 'a conflict changes nothing');
    const f = await apply(P, other, '?fieldManager=mgr-b&force=true');
    assert.equal(f.status, 200, f.text);
    assert.equal(f.body.spec.suspend, false);
    assert.deepEqual(managed(f), [
      entry('mgr-a', 'Apply', { 'f:spec': { 'f:branch': {}, 'f:path': {}, 'f:repository': { 'f:url': {} } } }),
      entry('mgr-b', 'Apply', { 'f:spec': { 'f:suspend': {} } }),
    ]);
    rv = f.body.metadata.resourceVersion;
  });

  test('applying the same value as another manager shares the field (no conflict)', async () => {
    const r = await apply(P, config({ suspend: false }), '?fieldManager=mgr-a');
    assert.equal(r.status, 200, r.text);
    assert.notEqual(r.body.metadata.resourceVersion, rv, 'only ownership changed, and kube stores that');
    assert.deepEqual(managed(r), [
      entry('mgr-a', 'Apply', { 'f:spec': { 'f:branch': {}, 'f:path': {}, 'f:repository': { 'f:url': {} }, 'f:suspend': {} } }),
      entry('mgr-b', 'Apply', { 'f:spec': { 'f:suspend': {} } }),
    ]);
  });

  test('several conflicts from several managers: one line per manager, every cause listed', async () => {
    assert.equal((await merge(P, { metadata: { labels: { team: 'a' } } }, '?fieldManager=labeler')).status, 200);
    const r = await apply(P, { ...config({ suspend: true }), metadata: { name: 'demo', namespace: 'ssa', labels: { team: 'b' } } }, '?fieldManager=mgr-c');
    assertStatus(
      r,
      409,
      'Conflict',
      `Apply failed with 3 conflicts: conflicts with "labeler" using ${GV}:\n- .metadata.labels.team\nconflicts with "mgr-a":\n- .spec.suspend\nconflicts with "mgr-b":\n- .spec.suspend`,
    );
    assert.deepEqual(r.body.details.causes, [
      { reason: 'FieldManagerConflict', message: `conflict with "labeler" using ${GV}`, field: '.metadata.labels.team' },
      { reason: 'FieldManagerConflict', message: 'conflict with "mgr-a"', field: '.spec.suspend' },
      { reason: 'FieldManagerConflict', message: 'conflict with "mgr-b"', field: '.spec.suspend' },
    ]);
  });

  test('83: dryRun=All → 200 with the result, nothing stored', async () => {
    const before = (await server.get(P)).body;
    const r = await apply(P, config({ suspend: true, includeClusterNoise: true }), '?fieldManager=mgr-a&dryRun=All&force=true');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.includeClusterNoise, true);
    assert.deepEqual((await server.get(P)).body, before);
  });

  test('a field the applier stops sending is removed when it was the only owner; kept when shared', async () => {
    const base = gitTarget('drop', 'ssa', { spec: { prune: { mode: 'Always' }, resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['a', 'b'] }] } });
    assert.equal((await apply(`${ns('ssa')}/drop`, base, '?fieldManager=mgr-a')).status, 201);
    const shared = gitTarget('drop', 'ssa', { spec: { resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['b'] }] } });
    assert.equal((await apply(`${ns('ssa')}/drop`, shared, '?fieldManager=mgr-b')).status, 200);
    const r = await apply(`${ns('ssa')}/drop`, gitTarget('drop', 'ssa'), '?fieldManager=mgr-a');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.spec.prune, { mode: 'OnEvent' }, 'removed, then defaulted');
    assert.deepEqual(r.body.spec.resources, [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['b'] }]);
  });

  test('the body may be YAML; a config of another kind or carrying managedFields is 400', async () => {
    const yaml = `apiVersion: ${GV}\nkind: GitTarget\nmetadata:\n  name: yaml\nspec:\n  repository: {url: https://example.com/r.git}\n  branch: main\n  path: p\n`;
    const r = await apply(`${ns('ssa')}/yaml`, yaml, '?fieldManager=y');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.path, 'p');
    assertStatus(await apply(`${ns('ssa')}/yaml`, { ...gitTarget('yaml', 'ssa'), kind: 'CommitRequest' }, '?fieldManager=y'), 400, 'BadRequest', `invalid object type: ${GV}, Kind=CommitRequest`);
    const withManaged = gitTarget('yaml', 'ssa');
    withManaged.metadata.managedFields = [];
    assertStatus(await apply(`${ns('ssa')}/yaml`, withManaged, '?fieldManager=y'), 400, 'BadRequest', 'metadata.managedFields must be nil');
  });

  test('unknown fields: Strict refuses naming them (422); Warn and Ignore drop them before anyone owns them', async () => {
    const cfg = gitTarget('unknown', 'ssa', { spec: { bogus: 1 } });
    assertStatus(await apply(`${ns('ssa')}/unknown`, cfg, '?fieldManager=u'), 422, 'Invalid', 'GitTarget.configbutler.ai "unknown" is invalid: spec.bogus: Forbidden: unknown field "spec.bogus"');
    const warn = await apply(`${ns('ssa')}/unknown`, cfg, '?fieldManager=u&fieldValidation=Warn');
    assert.equal(warn.status, 201, warn.text);
    assert.equal(warn.headers.warning, '299 - "unknown field \\"spec.bogus\\""');
    assert.equal(warn.body.spec.bogus, undefined);
    assert.deepEqual(managed(warn), [entry('u', 'Apply', { 'f:spec': { 'f:branch': {}, 'f:path': {}, 'f:repository': { 'f:url': {} } } })]);
    const ignore = await apply(`${ns('ssa')}/unknown`, cfg, '?fieldManager=u&fieldValidation=Ignore');
    assert.equal(ignore.status, 200, ignore.text);
    assert.equal(ignore.headers.warning, undefined);
    assert.equal(ignore.body.metadata.resourceVersion, warn.body.metadata.resourceVersion);
  });

  test('duplicate keys of a map list → 422 Duplicate value', async () => {
    const dup = gitTarget('dup', 'ssa', {
      spec: { resources: [{ group: '', version: 'v1', resource: 'configmaps' }, { group: '', version: 'v2', resource: 'configmaps' }] },
    });
    assertStatus(await apply(`${ns('ssa')}/dup`, dup, '?fieldManager=d'), 422, 'Invalid', 'GitTarget.configbutler.ai "dup" is invalid: spec.resources[1]: Duplicate value: {"group":"","resource":"configmaps"}');
    assertStatus(await server.request('POST', ns('ssa'), { body: dup }), 422, 'Invalid', 'GitTarget.configbutler.ai "dup" is invalid: spec.resources[1]: Duplicate value: {"group":"","resource":"configmaps"}');
  });
});

describe('managedFields on every write path', () => {
  const P = `${ns('mf')}/demo`;
  test('create, merge patch, PUT and status writes record Update entries of the fields each changed', async () => {
    const c = await server.request('POST', `${ns('mf')}?fieldManager=creator`, { body: gitTarget('demo', 'mf') });
    assert.equal(c.status, 201, c.text);
    // Defaults are part of what the creator wrote (CRDs default while decoding the request).
    const created = {
      'f:spec': {
        '.': {},
        'f:branch': {},
        'f:commit': { '.': {}, 'f:idleSeconds': {}, 'f:maxAgeSeconds': {}, 'f:mode': {} },
        'f:includeClusterNoise': {},
        'f:path': {},
        'f:prune': { '.': {}, 'f:mode': {} },
        'f:repository': { '.': {}, 'f:url': {} },
        'f:suspend': {},
      },
    };
    const createdWithoutSuspend = { 'f:spec': { ...created['f:spec'], 'f:suspend': undefined } };
    delete createdWithoutSuspend['f:spec']['f:suspend'];
    assert.deepEqual(managed(c), [entry('creator', 'Update', created)]);
    const p = await merge(P, { spec: { suspend: true } }, '?fieldManager=patcher');
    assert.deepEqual(managed(p), [entry('creator', 'Update', createdWithoutSuspend), entry('patcher', 'Update', { 'f:spec': { 'f:suspend': {} } })]);
    const put = await server.request('PUT', `${P}?fieldManager=putter`, { body: { ...p.body, spec: { ...p.body.spec, suspend: false } } });
    assert.deepEqual(managed(put), [entry('creator', 'Update', createdWithoutSuspend), entry('putter', 'Update', { 'f:spec': { 'f:suspend': {} } })]);
    const st = await merge(`${P}/status`, { status: { pendingChanges: 3 } }, '?fieldManager=controller');
    // The status map already exists (the server recorded status.authority at create, owned by no
    // manager), so the controller owns only the field it added.
    assert.deepEqual(managed(st).find((e: any) => e.manager === 'controller'), entry('controller', 'Update', { 'f:status': { 'f:pendingChanges': {} } }, 'status'));
    const noop = await merge(P, { spec: { suspend: false } }, '?fieldManager=other');
    assert.equal(noop.body.metadata.resourceVersion, st.body.metadata.resourceVersion, 'a no-op patch stores nothing');
  });

  test('apply on status: conditions merge by type between managers; the main resource ignores status', async () => {
    const cond = (type: string, s: string) => ({ type, status: s, reason: 'R', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' });
    const cfg = (conds: unknown[]) => ({ apiVersion: GV, kind: 'GitTarget', metadata: { name: 'demo', namespace: 'mf' }, status: { conditions: conds } });
    assert.equal((await apply(`${P}/status`, cfg([cond('Ready', 'True')]), '?fieldManager=ready-ctl')).status, 200);
    const r = await apply(`${P}/status`, cfg([cond('Synced', 'False')]), '?fieldManager=sync-ctl');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.status.conditions.map((c: any) => [c.type, c.status]), [['Ready', 'True'], ['Synced', 'False']]);
    const mine = managed(r).find((e: any) => e.manager === 'sync-ctl');
    assert.deepEqual(mine, entry('sync-ctl', 'Apply', {
      'f:status': { 'f:conditions': { 'k:{"type":"Synced"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} } } },
    }, 'status'));
    const clash = await apply(`${P}/status`, cfg([cond('Ready', 'False')]), '?fieldManager=sync-ctl');
    assertStatus(clash, 409, 'Conflict', 'Apply failed with 1 conflict: conflict with "ready-ctl" with subresource "status": .status.conditions[type="Ready"].status');
    const main = await apply(P, { ...cfg([cond('Ready', 'Unknown')]), spec: undefined }, '?fieldManager=main');
    assert.equal(main.status, 200, main.text);
    assert.equal(main.body.status.conditions[0].status, 'True', 'status is written through /status only');
  });
});

describe('kcp logical clusters', () => {
  test('apply and create under /clusters/<name>: the server\'s kcp.io/cluster annotation is owned by nobody', async () => {
    const base = `/clusters/ws1${ns('kcp')}`;
    const a = await apply(`${base}/applied`, gitTarget('applied', 'kcp'), '?fieldManager=mgr');
    assert.equal(a.status, 201, a.text);
    assert.deepEqual(a.body.metadata.annotations, { 'kcp.io/cluster': 'ws1' });
    assert.deepEqual(managed(a), [entry('mgr', 'Apply', { 'f:spec': { 'f:branch': {}, 'f:path': {}, 'f:repository': { 'f:url': {} } } })]);
    const c = await server.request('POST', `${base}?fieldManager=creator`, { body: gitTarget('created', 'kcp') });
    assert.equal(c.status, 201, c.text);
    assert.equal(JSON.stringify(managed(c)).includes('kcp.io'), false, JSON.stringify(managed(c)));
    const again = await apply(`${base}/applied`, gitTarget('applied', 'kcp'), '?fieldManager=mgr');
    assert.equal(again.body.metadata.resourceVersion, a.body.metadata.resourceVersion, 'no-op');
  });
});

describe('the sandbox core kinds', () => {
  test('a ConfigMap (no status subresource) is applied, merged by data key, and conflicts like ours', async (t) => {
    const sandbox = await startServer(['--sandbox', '--controllers=none']);
    t.after(() => sandbox.stop());
    const path = '/api/v1/namespaces/default/configmaps/cm';
    const cm = (data: Record<string, string>) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default' }, data });
    const put = (body: string, q: string) => sandbox.request('PATCH', `${path}${q}`, { contentType: 'application/apply-patch+yaml', body });
    const a = await put(cm({ a: '1', b: '2' }), '?fieldManager=one');
    assert.equal(a.status, 201, a.text);
    assert.deepEqual(managed(a), [{ manager: 'one', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {}, 'f:b': {} } } }]);
    const b = await put(cm({ c: '3' }), '?fieldManager=two');
    assert.deepEqual(b.body.data, { a: '1', b: '2', c: '3' });
    assertStatus(await put(cm({ a: '9' }), '?fieldManager=two'), 409, 'Conflict', 'Apply failed with 1 conflict: conflict with "one": .data.a');
    const c = await put(cm({ a: '1' }), '?fieldManager=one');
    assert.deepEqual(c.body.data, { a: '1', c: '3' }, '"b" had one owner and goes');
  });
});
