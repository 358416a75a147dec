// Server-side apply, differentially: the same sequence of create, update, patch, apply and forced
// apply by several managers is sent to our server and to the real kube-apiserver of the test
// control plane, which serves GitTarget from a CRD holding our exact OpenAPI v3 schema. After each
// step the answers must agree: status code, the stored object, managedFields (times aside), whether
// the resourceVersion moved, and for a 409 the message and every conflict cause.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RESOURCES } from '../../src/api/resources.js';
import { buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';
import { startServer, type StartedServer } from '../support/server.js';
import { startControlPlane, type ControlPlane } from './fixture.js';
import { createGitTargetCRD, kubeRequest as kubeRequestTo, type Answer } from './differential.js';

const GROUP = 'configbutler.ai';
const GV = `${GROUP}/v1alpha1`;
const BASE = `/apis/${GV}/namespaces/default/gittargets`;

let cp: ControlPlane;
let ours: StartedServer;

const kubeRequest = (method: string, path: string, contentType: string | undefined, body: string | undefined) => kubeRequestTo(cp, method, path, { body, contentType });

/** Keywords a CRD's JSONSchemaProps accepts; the rest of our published schema (GVK lists) is dropped. */
const CRD_KEYS = new Set([
  'type', 'properties', 'items', 'required', 'description', 'default', 'format', 'minimum', 'maximum', 'minLength', 'maxLength',
  'pattern', 'enum', 'nullable', 'additionalProperties', 'minItems', 'maxItems',
  'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string',
]);
function crdSchema(s: any): any {
  if (Array.isArray(s)) return s.map(crdSchema);
  if (s === null || typeof s !== 'object') return s;
  const out: any = {};
  for (const [k, v] of Object.entries(s)) {
    if (!CRD_KEYS.has(k)) continue;
    if (k === 'properties') out.properties = Object.fromEntries(Object.entries(v as object).map(([n, sub]) => [n, crdSchema(sub)]));
    else if (k === 'items' || (k === 'additionalProperties' && typeof v === 'object')) out[k] = crdSchema(v);
    else out[k] = v;
  }
  return out;
}

before(async () => {
  // No controllers on our side: kube-apiserver runs none for the CRD either.
  [cp, ours] = await Promise.all([startControlPlane(), startServer(['--controllers=none'])]);
  const docs = buildOpenAPIDocuments(RESOURCES, { title: 't', version: 'v0' });
  const published = JSON.parse(docs.v3GroupVersions.get(`apis/${GV}`)!.body.toString()).components.schemas['ai.configbutler.v1alpha1.GitTarget'];
  const schema = crdSchema(published);
  // A CRD's metadata schema may only be `type: object`; kube-apiserver brings ObjectMeta's own.
  schema.properties.metadata = { type: 'object' };
  await createGitTargetCRD(cp, schema);
});

after(async () => {
  await ours?.stop();
  await cp?.stop();
});

/** What must agree: the object without server-generated identity, managedFields without times, sorted. */
function normalize(a: Answer): unknown {
  if (a.status >= 300) {
    const causes = [...(a.body?.details?.causes ?? [])].sort((x: any, y: any) => `${x.message}${x.field}`.localeCompare(`${y.message}${y.field}`));
    return { status: a.status, reason: a.body?.reason, message: a.body?.message, causes };
  }
  const o = structuredClone(a.body);
  for (const k of ['uid', 'resourceVersion', 'creationTimestamp']) delete o.metadata[k];
  // status.authority is recorded by our server from the request (docs/security.md); a CRD has none.
  if (o.status?.authority) {
    delete o.status.authority;
    if (Object.keys(o.status).length === 0) delete o.status;
  }
  o.metadata.managedFields = (o.metadata.managedFields ?? [])
    .map(({ time: _t, ...rest }: any) => rest)
    .sort((x: any, y: any) => `${x.manager}/${x.operation}/${x.subresource ?? ''}`.localeCompare(`${y.manager}/${y.operation}/${y.subresource ?? ''}`));
  return { status: a.status, object: o };
}

const lastRV: Record<'ours' | 'kube', string | undefined> = { ours: undefined, kube: undefined };

/**
 * Sends one step to both servers and compares; `expect` is the status code both must answer and
 * `rvMoves` whether the resourceVersion must change (writes only). Returns our answer.
 */
async function step(what: string, expect: number, method: string, path: string, contentType: string | undefined, body?: unknown, rvMoves?: boolean): Promise<Answer> {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const [mine, kube] = await Promise.all([
    ours.request(method, path, text === undefined ? {} : { body: text, contentType }),
    kubeRequest(method, path, contentType, text),
  ]);
  assert.equal(kube.status, expect, `${what}: kube-apiserver answered ${kube.text}`);
  assert.deepEqual(normalize(mine), normalize(kube), `${what}\nours: ${mine.text}\nkube: ${kube.text}`);
  const before = lastRV.ours;
  if (mine.status < 300 && method !== 'GET') {
    const moved = (side: 'ours' | 'kube', a: Answer) => {
      const rv = a.body.metadata.resourceVersion as string;
      const changed = rv !== lastRV[side];
      lastRV[side] = rv;
      return changed;
    };
    const [a, b] = [moved('ours', mine), moved('kube', kube)];
    assert.equal(a, b, `${what}: the resourceVersion moved on one server only`);
    if (rvMoves !== undefined && before !== undefined) assert.equal(a, rvMoves, `${what}: resourceVersion ${rvMoves ? 'unchanged' : 'changed'}`);
  }
  return mine;
}

const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';
const gt = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: GV,
  kind: 'GitTarget',
  metadata: { name: 'diff', namespace: 'default', ...metadata },
  spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: 'tenants/a', ...spec },
});
const res = (resource: string, extra: Record<string, unknown> = {}) => ({ group: resource === 'deployments' ? 'apps' : '', version: 'v1', resource, ...extra });
const cond = (type: string, status: string) => ({ type, status, reason: 'Because', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' });
const statusConfig = (conditions: unknown[]) => ({ apiVersion: GV, kind: 'GitTarget', metadata: { name: 'diff', namespace: 'default' }, status: { conditions } });

test('the same create, update, patch, apply and forced apply sequence gives the same objects and managedFields', async () => {
  const P = `${BASE}/diff`;
  const applyA = gt({ commit: { idleSeconds: 7 }, resources: [res('configmaps', { namespaces: ['a', 'b'] }), res('deployments')] }, { labels: { team: 'a' } });
  const applyB = gt({ suspend: false, commit: { idleSeconds: 8 }, resources: [res('configmaps', { namespaces: ['b', 'c'] })] });
  await step('create by "creator"', 201, 'POST', `${BASE}?fieldManager=creator`, 'application/json', gt({ resources: [res('configmaps')] }, { labels: { app: 'x' } }));
  await step('merge patch by "patcher"', 200, 'PATCH', `${P}?fieldManager=patcher`, MERGE, { spec: { suspend: true } });
  await step('apply by mgr-a changing a default the creator owns → conflict', 409, 'PATCH', `${P}?fieldManager=mgr-a`, APPLY, applyA);
  await step('apply by mgr-a, forced (labels, a set, a two-key map list, a struct)', 200, 'PATCH', `${P}?fieldManager=mgr-a&force=true`, APPLY, applyA, true);
  await step('the same apply again (no-op)', 200, 'PATCH', `${P}?fieldManager=mgr-a`, APPLY, applyA, false);
  await step('apply by mgr-b taking a field of an Update manager and of an Apply manager → conflicts', 409, 'PATCH', `${P}?fieldManager=mgr-b`, APPLY, applyB);
  await step('the same with force=true', 200, 'PATCH', `${P}?fieldManager=mgr-b&force=true`, APPLY, applyB, true);
  await step('mgr-a stops sending deployments and a set item (the shared item and its shared entry stay)', 200, 'PATCH', `${P}?fieldManager=mgr-a`, APPLY,
    gt({ resources: [res('configmaps', { namespaces: ['a'] })] }, { labels: { team: 'a' } }), true);
  await step('mgr-b stops sending the struct it took over: removed, then defaulted', 200, 'PATCH', `${P}?fieldManager=mgr-b`, APPLY,
    gt({ suspend: false, resources: [res('configmaps', { namespaces: ['b', 'c'] })] }), true);
  const current = await step('get', 200, 'GET', P, undefined);
  const put = structuredClone(current.body);
  put.spec.commit = { ...put.spec.commit, mode: 'OnRequest' };
  delete put.metadata.resourceVersion;
  delete put.metadata.uid; // each server's own
  const kubeCurrent = await kubeRequest('GET', P, undefined, undefined);
  // Each server gets its own resourceVersion in the PUT.
  const [mine, kube] = await Promise.all([
    ours.request('PUT', `${P}?fieldManager=putter`, { body: JSON.stringify({ ...put, metadata: { ...put.metadata, resourceVersion: current.body.metadata.resourceVersion } }), contentType: 'application/json' }),
    kubeRequest('PUT', `${P}?fieldManager=putter`, 'application/json', JSON.stringify({ ...put, metadata: { ...put.metadata, resourceVersion: kubeCurrent.body.metadata.resourceVersion } })),
  ]);
  assert.deepEqual(normalize(mine), normalize(kube), `PUT by putter\nours: ${mine.text}\nkube: ${kube.text}`);
  lastRV.ours = mine.body.metadata.resourceVersion;
  lastRV.kube = kube.body.metadata.resourceVersion;
  await step('status apply by ctl-a', 200, 'PATCH', `${P}/status?fieldManager=ctl-a`, APPLY, statusConfig([cond('Ready', 'True')]));
  await step('status apply by ctl-b (another condition type)', 200, 'PATCH', `${P}/status?fieldManager=ctl-b`, APPLY, statusConfig([cond('Synced', 'False')]));
  await step('status apply by ctl-b taking ctl-a\'s condition → conflict', 409, 'PATCH', `${P}/status?fieldManager=ctl-b`, APPLY, statusConfig([cond('Ready', 'False')]));
  await step('status merge patch by ctl-c', 200, 'PATCH', `${P}/status?fieldManager=ctl-c`, MERGE, { status: { pendingChanges: 3 } });
  await step('main-resource apply that also sends status (ignored)', 200, 'PATCH', `${P}?fieldManager=mgr-c`, APPLY, { ...gt({ suspend: false }), status: { pendingChanges: 9 } });
  const meta = (extra: Record<string, unknown>) => ({ ...gt({ suspend: false }), metadata: { name: 'diff', namespace: 'default', ...extra } });
  const owner = (uid: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name, uid });
  await step('metadata: finalizers (a set) and ownerReferences (a map keyed by uid) by mgr-d', 200, 'PATCH', `${P}?fieldManager=mgr-d`, APPLY,
    meta({ finalizers: ['example.com/a', 'example.com/b'], ownerReferences: [owner('00000000-0000-4000-8000-00000000000a', 'a')] }), true);
  await step('the same by mgr-e, overlapping: set union, map items merged', 200, 'PATCH', `${P}?fieldManager=mgr-e`, APPLY,
    meta({ finalizers: ['example.com/b', 'example.com/c'], ownerReferences: [owner('00000000-0000-4000-8000-00000000000b', 'b')] }), true);
  await step('mgr-d drops everything it alone owned', 200, 'PATCH', `${P}?fieldManager=mgr-d`, APPLY, meta({}), true);
  await step('apply that creates another object', 201, 'PATCH', `${BASE}/other?fieldManager=mgr-a`, APPLY, { ...gt({}), metadata: { name: 'other', namespace: 'default' } });
});

test('kubectl taking over from client-side apply, a managedFields reset and before-first-apply agree', async () => {
  const P = `${BASE}/csa`;
  const LAST = 'kubectl.kubernetes.io/last-applied-configuration';
  const config = (team: string) => ({ ...gt({ suspend: true }), metadata: { name: 'csa', namespace: 'default', labels: { team } } });
  const created = { ...config('a'), metadata: { ...config('a').metadata, annotations: { [LAST]: JSON.stringify(config('a')) } } };
  await step('client-side apply creates with the last-applied annotation', 201, 'POST', `${BASE}?fieldManager=kubectl-client-side-apply`, 'application/json', created);
  await step('kubectl (server-side) changes a field still as last applied: forced, annotation rewritten', 200, 'PATCH', `${P}?fieldManager=kubectl`, APPLY, config('b'));
  await step('another manager changing the same field conflicts', 409, 'PATCH', `${P}?fieldManager=other`, APPLY, config('c'));
  await step('dry run of the forced apply', 200, 'PATCH', `${P}?fieldManager=other&force=true&dryRun=All`, APPLY, config('c'));
  await step('an empty managedFields list in a patch changes nothing', 200, 'PATCH', `${P}?fieldManager=resetter`, MERGE, { metadata: { managedFields: [] } });
  await step('managedFields reset by a merge patch ([{}] drops all tracking)', 200, 'PATCH', `${P}?fieldManager=resetter`, MERGE, { metadata: { managedFields: [{}] } });
  await step('an update of an untracked object stays untracked', 200, 'PATCH', `${P}?fieldManager=patcher`, MERGE, { spec: { includeClusterNoise: true } });
  await step('the first apply conflicts with before-first-apply', 409, 'PATCH', `${P}?fieldManager=first`, APPLY, { ...gt({ suspend: false }), metadata: { name: 'csa', namespace: 'default' } });
  await step('an apply configuration carrying managedFields is refused', 400, 'PATCH', `${P}?fieldManager=first`, APPLY, { ...gt({}), metadata: { name: 'csa', namespace: 'default', managedFields: [] } });
  await step('an apply configuration of another kind is refused', 400, 'PATCH', `${P}?fieldManager=first`, APPLY, { ...gt({}), kind: 'CommitRequest' });
  await step('the first apply, forced', 200, 'PATCH', `${P}?fieldManager=first&force=true`, APPLY, { ...gt({ suspend: false }), metadata: { name: 'csa', namespace: 'default' } });
});
