// Structure of the OpenAPI documents: what kubectl explain, kubectl's field-validation detection,
// client-side apply's patch-type detection and kube-aggregator read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { RESOURCES, GROUP, VERSION } from '../../src/api/resources.js';
import { buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';

const docs = buildOpenAPIDocuments(RESOURCES, { title: 'reverser-apiserver', version: 'v0.1.0' });
const ownGV = docs.v3GroupVersions.get(`apis/${GROUP}/${VERSION}`)!;
const v3 = JSON.parse(ownGV.body.toString());
const v2 = JSON.parse(docs.v2Json.body.toString());
const GV = `/apis/${GROUP}/${VERSION}`;
const ITEM = `${GV}/namespaces/{namespace}/gittargets/{name}`;
const GT = 'ai.configbutler.v1alpha1.GitTarget';
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const gvk = (kind: string) => ({ group: GROUP, kind, version: VERSION });
const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];

test('v3 root lists only our group-version, with the SHA-512 of the GV document as hash', () => {
  const root = JSON.parse(docs.v3Root.body.toString());
  const hash = createHash('sha512').update(ownGV.body).digest('hex').toUpperCase();
  assert.deepEqual(root, { paths: { [`apis/${GROUP}/${VERSION}`]: { serverRelativeURL: `/openapi/v3/apis/${GROUP}/${VERSION}?hash=${hash}` } } });
  assert.equal(ownGV.hash, hash);
  assert.equal(ownGV.path, `apis/${GROUP}/${VERSION}`);
  assert.equal(ownGV.etag, `"${hash}"`);
  assert.match(docs.v3Root.etag, /^"[0-9A-F]{128}"$/);
});

test('documents are deterministic', () => {
  const again = buildOpenAPIDocuments(RESOURCES, { title: 'reverser-apiserver', version: 'v0.1.0' });
  assert.equal(again.v3GroupVersions.get(ownGV.path)!.hash, ownGV.hash);
  assert.ok(again.v2Json.body.equals(docs.v2Json.body));
  assert.ok(again.v2Protobuf.body.equals(docs.v2Protobuf.body));
});

test('v3: components carry the GVK as a list, metadata refers to ObjectMeta', () => {
  assert.match(v3.openapi, /^3\./);
  const s = v3.components.schemas;
  assert.deepEqual(s[GT]['x-kubernetes-group-version-kind'], [gvk('GitTarget')]);
  assert.deepEqual(s[`${GT}List`]['x-kubernetes-group-version-kind'], [gvk('GitTargetList')]);
  assert.deepEqual(s['ai.configbutler.v1alpha1.CommitRequest']['x-kubernetes-group-version-kind'], [gvk('CommitRequest')]);
  assert.deepEqual(s[GT].properties.metadata.allOf, [{ $ref: `#/components/schemas/${META}.ObjectMeta` }]);
  assert.deepEqual(s[GT].properties.metadata.default, {});
  assert.deepEqual(s[`${GT}List`].properties.items.items, { $ref: `#/components/schemas/${GT}` });
  for (const n of ['ObjectMeta', 'ListMeta', 'Status', 'WatchEvent', 'DeleteOptions', 'Patch']) assert.ok(s[`${META}.${n}`], n);
  // No TypeBox leftovers anywhere in the document.
  const text = ownGV.body.toString();
  for (const k of ['"patternProperties"', '"anyOf"', '"const"', '"additionalProperties":false', '"type":"null"']) assert.ok(!text.includes(k), k);
});

test('v3: schema keywords survive the conversion', () => {
  const spec = v3.components.schemas[GT].properties.spec;
  assert.deepEqual(spec.required, ['repository', 'branch', 'path']);
  assert.match(spec.properties.repository.properties.url.description, /^Repository URL: https:\/\//);
  assert.equal(spec.properties.branch.maxLength, 255);
  assert.deepEqual(spec.properties.commit.properties.mode, {
    type: 'string',
    enum: ['Auto', 'OnRequest'],
    default: 'Auto',
    description: spec.properties.commit.properties.mode.description,
  });
  assert.equal(spec.properties.commit.properties.idleSeconds.maximum, 86400);
  assert.deepEqual(spec.properties.commit.default, {});
  const conds = v3.components.schemas[GT].properties.status.properties.conditions;
  assert.equal(conds['x-kubernetes-list-type'], 'map');
  assert.deepEqual(conds['x-kubernetes-list-map-keys'], ['type']);
  const meta = v3.components.schemas[`${META}.ObjectMeta`].properties;
  assert.deepEqual(meta.labels.additionalProperties, { type: 'string' });
  assert.equal(meta.labels.type, 'object');
  assert.deepEqual(meta.creationTimestamp, { type: 'string', format: 'date-time', nullable: true, description: meta.creationTimestamp.description });
  const extra = v3.components.schemas['ai.configbutler.v1alpha1.CommitRequest'].properties.status.properties.submitter.properties.extra;
  assert.deepEqual(extra.additionalProperties, { type: 'array', items: { type: 'string' } });
});

test('v3: every stored resource has collection, item, all-namespaces and status paths with complete operations', () => {
  for (const r of RESOURCES.filter((x) => !x.verbs)) {
    const coll = `${GV}/namespaces/{namespace}/${r.plural}`;
    const paths = [coll, `${coll}/{name}`, `${coll}/{name}/status`, `${GV}/${r.plural}`];
    for (const p of paths) assert.ok(v3.paths[p], p);
    const actions = (p: string) => Object.fromEntries(['get', 'post', 'put', 'patch', 'delete'].filter((m) => v3.paths[p][m]).map((m) => [m, v3.paths[p][m]['x-kubernetes-action']]));
    assert.deepEqual(actions(coll), { get: 'list', post: 'post', delete: 'deletecollection' });
    assert.deepEqual(actions(`${coll}/{name}`), { get: 'get', put: 'put', patch: 'patch', delete: 'delete' });
    assert.deepEqual(actions(`${coll}/{name}/status`), { get: 'get', put: 'put', patch: 'patch' });
    assert.deepEqual(actions(`${GV}/${r.plural}`), { get: 'list' });
    const ids = new Set<string>();
    for (const p of paths) {
      for (const m of ['get', 'post', 'put', 'patch', 'delete']) {
        const op = v3.paths[p][m];
        if (!op) continue;
        assert.deepEqual(op['x-kubernetes-group-version-kind'], gvk(r.kind), `${m} ${p}`);
        assert.ok(op.operationId && !ids.has(op.operationId), op.operationId);
        ids.add(op.operationId);
      }
    }
    const list = v3.paths[coll].get.parameters.map((x: any) => x.name);
    for (const n of ['labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion', 'resourceVersionMatch', 'watch', 'allowWatchBookmarks', 'timeoutSeconds', 'sendInitialEvents']) {
      assert.ok(list.includes(n), n);
    }
    assert.ok(v3.paths[coll].parameters.some((x: any) => x.name === 'pretty'));
    assert.deepEqual(v3.paths[coll].post.parameters.map((x: any) => x.name), ['dryRun', 'fieldManager', 'fieldValidation']);
  }
});

test('v3: the create-only RepositoryScan publishes its create operation and nothing else', () => {
  const coll = `${GV}/namespaces/{namespace}/repositoryscans`;
  const ours = Object.keys(v3.paths).filter((p) => p.includes('repositoryscans'));
  assert.deepEqual(ours, [coll]);
  assert.deepEqual(Object.keys(v3.paths[coll]).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)), ['post']);
  assert.equal(v3.paths[coll].post.operationId, 'createConfigbutlerAiV1alpha1NamespacedRepositoryScan');
  assert.deepEqual(v3.paths[coll].post['x-kubernetes-group-version-kind'], gvk('RepositoryScan'));
});

test('v2 and v3 publish the list types server-side apply merges by', () => {
  const markers = (schemas: Record<string, any>) => {
    const gt = schemas[GT].properties;
    const meta = schemas[`${META}.ObjectMeta`].properties;
    const pick = (s: any) => ({ type: s['x-kubernetes-list-type'], keys: s['x-kubernetes-list-map-keys'] });
    return {
      resources: pick(gt.spec.properties.resources),
      namespaces: pick(gt.spec.properties.resources.items.properties.namespaces),
      conditions: pick(gt.status.properties.conditions),
      finalizers: pick(meta.finalizers),
      ownerReferences: pick(meta.ownerReferences),
      managedFields: pick(meta.managedFields),
    };
  };
  const want = {
    resources: { type: 'map', keys: ['group', 'resource'] },
    namespaces: { type: 'set', keys: undefined },
    conditions: { type: 'map', keys: ['type'] },
    finalizers: { type: 'set', keys: undefined },
    ownerReferences: { type: 'map', keys: ['uid'] },
    managedFields: { type: undefined, keys: undefined },
  };
  assert.deepEqual(markers(v3.components.schemas), want);
  assert.equal(v3.components.schemas[`${META}.ObjectMeta`].properties.ownerReferences.items['x-kubernetes-map-type'], 'atomic');
  assert.equal(v2.definitions[`${META}.ObjectMeta`].properties.ownerReferences.items['x-kubernetes-map-type'], 'atomic');
  assert.deepEqual(markers(v2.definitions), want);
  // Map-list keys must be required (or defaulted) for every item to have its key.
  // (version is optional: the source's preferred version when omitted; it is no key.)
  assert.deepEqual(v3.components.schemas[GT].properties.spec.properties.resources.items.required, ['group', 'resource']);
});

test('v3: PATCH has fieldValidation at operation level and the three patch types, never strategic merge', () => {
  for (const p of [ITEM, `${ITEM}/status`]) {
    const patch = v3.paths[p].patch;
    assert.deepEqual(patch['x-kubernetes-group-version-kind'], gvk('GitTarget'));
    assert.ok(patch.parameters.some((x: any) => x.name === 'fieldValidation' && x.in === 'query'));
    assert.ok(patch.parameters.some((x: any) => x.name === 'force' && x.in === 'query' && x.schema.type === 'boolean'));
    assert.deepEqual(Object.keys(patch.requestBody.content).sort(), [...PATCH_TYPES].sort());
  }
  assert.ok(!ownGV.body.toString().includes('strategic-merge-patch'));
});

test('v2 JSON: Swagger 2.0 with definitions, consumes/produces and body parameters', () => {
  assert.equal(v2.swagger, '2.0');
  assert.deepEqual(Object.keys(v2.definitions).sort(), Object.keys(v3.components.schemas).sort());
  assert.deepEqual(v2.definitions[GT]['x-kubernetes-group-version-kind'], [gvk('GitTarget')]);
  assert.deepEqual(v2.definitions[GT].properties.metadata, { $ref: `#/definitions/${META}.ObjectMeta`, description: "Standard object's metadata." });
  assert.equal(v2.definitions[`${META}.ObjectMeta`].properties.creationTimestamp.nullable, undefined);
  const patch = v2.paths[ITEM].patch;
  assert.deepEqual(patch['x-kubernetes-group-version-kind'], gvk('GitTarget'));
  assert.deepEqual([...patch.consumes].sort(), [...PATCH_TYPES].sort());
  assert.ok(patch.parameters.some((x: any) => x.name === 'fieldValidation' && x.in === 'query' && x.type === 'string'));
  assert.deepEqual(patch.parameters.find((x: any) => x.in === 'body'), { name: 'body', in: 'body', required: true, schema: { $ref: `#/definitions/${META}.Patch` } });
  const post = v2.paths[`${GV}/namespaces/{namespace}/gittargets`].post;
  assert.deepEqual(post.parameters[0].schema, { $ref: `#/definitions/${GT}` });
  assert.ok(post.produces.includes('application/json'));
  assert.ok(!docs.v2Json.body.toString().includes('strategic-merge-patch'));
  assert.ok(!docs.v2Json.body.toString().includes('#/components/'));
});
