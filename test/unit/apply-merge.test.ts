// Table tests of the server-side apply merge (src/registry/apply/): each list type (atomic, set,
// map with one and with two keys), maps, field sets in fieldsV1, pruning of fields an applier stops
// sending, and conflicts, against the outcomes structured-merge-diff produces.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fromFieldsV1 } from '../../src/registry/apply/fieldsv1-decode.js';
import { FieldManager } from '../../src/registry/apply/field-manager.js';
import { managerId, decodeManagedFields } from '../../src/registry/apply/managed-fields.js';
import { deserialize, pathString, serialize } from '../../src/registry/apply/path.js';
import { shapeOf } from '../../src/registry/apply/schema.js';
import { merge, toFieldSet } from '../../src/registry/apply/typed.js';
import { compare } from '../../src/registry/apply/compare.js';
import { GitTargetSchema } from '../../src/api/gittarget.js';
import { StatusError } from '../../src/api/status.js';
import type { KubeObject } from '../../src/storage/types.js';

const str = { type: 'string' };
const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    atomicList: { type: 'array', items: str },
    setList: { type: 'array', items: str, 'x-kubernetes-list-type': 'set' },
    mapList: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: { type: 'object', additionalProperties: false, properties: { name: str, value: str, extra: str } },
    },
    twoKeys: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['group', 'resource'],
      items: { type: 'object', additionalProperties: false, properties: { group: str, resource: str, version: str } },
    },
    labels: { type: 'object', patternProperties: { '^(.*)$': str } },
    atomicMap: { type: 'object', 'x-kubernetes-map-type': 'atomic', properties: { a: str, b: str } },
    struct: { type: 'object', additionalProperties: false, properties: { a: str, b: str } },
  },
};
const shape = shapeOf(schema);

describe('merge: the applied value laid over the live one', () => {
  const cases: Array<[string, unknown, unknown, unknown]> = [
    ['atomic list: replaced whole', { atomicList: ['a', 'b'] }, { atomicList: ['c'] }, { atomicList: ['c'] }],
    ['set: union, applied order first, live-only items keep their place', { setList: ['a', 'b'] }, { setList: ['c', 'a'] }, { setList: ['c', 'a', 'b'] }],
    ['set: disjoint sets are concatenated', { setList: ['x'] }, { setList: ['y', 'z'] }, { setList: ['x', 'y', 'z'] }],
    [
      'map list: items merge by key, fields merge inside an item',
      { mapList: [{ name: 'a', value: '1', extra: 'e' }, { name: 'b', value: '2' }] },
      { mapList: [{ name: 'a', value: '9' }] },
      { mapList: [{ name: 'a', value: '9', extra: 'e' }, { name: 'b', value: '2' }] },
    ],
    [
      'map list keyed by two keys: same group, other resource is another item',
      { twoKeys: [{ group: '', resource: 'configmaps', version: 'v1' }, { group: 'apps', resource: 'deployments', version: 'v1' }] },
      { twoKeys: [{ group: 'apps', resource: 'deployments', version: 'v2' }, { group: 'apps', resource: 'statefulsets', version: 'v1' }] },
      {
        twoKeys: [
          { group: '', resource: 'configmaps', version: 'v1' },
          { group: 'apps', resource: 'deployments', version: 'v2' },
          { group: 'apps', resource: 'statefulsets', version: 'v1' },
        ],
      },
    ],
    ['map: merged by key', { labels: { a: '1', b: '2' } }, { labels: { b: '3', c: '4' } }, { labels: { a: '1', b: '3', c: '4' } }],
    ['atomic map: replaced whole', { atomicMap: { a: '1', b: '2' } }, { atomicMap: { b: '3' } }, { atomicMap: { b: '3' } }],
    ['struct: merged field by field', { struct: { a: '1' } }, { struct: { b: '2' } }, { struct: { a: '1', b: '2' } }],
  ];
  for (const [name, live, applied, want] of cases) {
    test(name, () => assert.deepEqual(merge(live, applied, shape), want));
  }
});

describe('field sets in fieldsV1', () => {
  test('each list type is owned as kube writes it', () => {
    const set = toFieldSet(
      {
        atomicList: ['a'],
        setList: ['x', 'y'],
        twoKeys: [{ group: '', resource: 'configmaps', version: 'v1' }],
        labels: { 'app.kubernetes.io/name': 'x' },
        struct: {},
      },
      shape,
    );
    assert.deepEqual(set.toFieldsV1(), {
      'f:atomicList': {},
      'f:labels': { 'f:app.kubernetes.io/name': {} },
      'f:setList': { 'v:"x"': {}, 'v:"y"': {} },
      'f:struct': {},
      'f:twoKeys': { 'k:{"group":"","resource":"configmaps"}': { '.': {}, 'f:group': {}, 'f:resource': {}, 'f:version': {} } },
    });
  });
  test('fieldsV1 decodes to the same set; keys are canonical (sorted, Go escaping)', () => {
    const v1 = { 'f:a': { '.': {}, 'f:b': {} }, 'f:m': { 'k:{"z":1,"a":"<x>"}': {} } };
    const set = fromFieldsV1(v1);
    assert.deepEqual(set.toFieldsV1(), { 'f:a': { '.': {}, 'f:b': {} }, 'f:m': { 'k:{"a":"\\u003cx\\u003e","z":1}': {} } });
    assert.equal(serialize(deserialize('v:"a&b"')), 'v:"a\\u0026b"');
    assert.throws(() => fromFieldsV1({ 'q:x': {} }), /unknown path element type/);
  });
  test('paths print as conflicts name them', () => {
    const set = toFieldSet({ twoKeys: [{ group: 'apps', resource: 'deployments' }], setList: ['s'], mapList: [{ name: 'n', value: 'v' }] }, shape);
    assert.deepEqual(set.paths().map(pathString), [
      '.mapList[name="n"]',
      '.mapList[name="n"].name',
      '.mapList[name="n"].value',
      '.setList[="s"]',
      '.twoKeys[group="apps",resource="deployments"]',
      '.twoKeys[group="apps",resource="deployments"].group',
      '.twoKeys[group="apps",resource="deployments"].resource',
    ]);
  });
  test('compare names added, modified and removed items', () => {
    const c = compare({ setList: ['a', 'b'], mapList: [{ name: 'x', value: '1' }] }, { setList: ['b', 'c'], mapList: [{ name: 'x', value: '2' }] }, shape);
    assert.deepEqual(c.added.paths().map(pathString), ['.setList[="c"]']);
    assert.deepEqual(c.removed.paths().map(pathString), ['.setList[="a"]']);
    assert.deepEqual(c.modified.paths().map(pathString), ['.mapList[name="x"].value']);
  });
});

describe('apply through the field manager (GitTarget schema)', () => {
  const fm = new FieldManager(GitTargetSchema, 'configbutler.ai/v1alpha1', 'GitTarget', { group: 'configbutler.ai', resource: 'gittargets', kind: 'GitTarget' });
  const gt = (spec: Record<string, unknown>, labels?: Record<string, string>) => ({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'x', namespace: 'n', ...(labels ? { labels } : {}) },
    spec: { repository: { url: 'https://e/r.git' }, branch: 'main', path: 'p', ...spec },
  });
  const cm = (namespaces?: string[]) => ({ group: '', version: 'v1', resource: 'configmaps', ...(namespaces ? { namespaces } : {}) });
  const run = (live: KubeObject | undefined, config: unknown, manager: string, force = false) => fm.apply(live, config, manager, force, '', 'x').object as KubeObject & { spec: any };

  test('set-union across managers: each owns its items; dropping one removes only its own', () => {
    let o = run(undefined, gt({ resources: [cm(['a', 'b'])] }), 'one');
    o = run(o, gt({ resources: [cm(['b', 'c'])] }), 'two');
    assert.deepEqual(o.spec.resources, [cm(['a', 'b', 'c'])]);
    o = run(o, gt({ resources: [cm([])] }), 'one');
    assert.deepEqual(o.spec.resources, [cm(['b', 'c'])], '"a" had one owner and goes; "b" stays with "two"');
  });

  test('map list keyed by group and resource: items of different appliers merge; a stopped item is removed', () => {
    const deploy = { group: 'apps', version: 'v1', resource: 'deployments' };
    let o = run(undefined, gt({ resources: [cm()] }), 'one');
    o = run(o, gt({ resources: [deploy] }), 'two');
    assert.deepEqual(o.spec.resources, [cm(), deploy]);
    o = run(o, gt({}), 'two');
    assert.deepEqual(o.spec.resources, [cm()]);
    const managed = decodeManagedFields(o.metadata.managedFields);
    assert.deepEqual([...managed.keys()].sort(), [managerId('one', 'Apply', '', ''), managerId('two', 'Apply', '', '')].sort());
  });

  test('conflicts list every field per manager; force moves them', () => {
    const o = run(undefined, gt({ suspend: true, commit: { idleSeconds: 7 } }, { team: 'a' }), 'one');
    assert.throws(
      () => run(o, gt({ suspend: false, commit: { idleSeconds: 8 } }, { team: 'b' }), 'two'),
      (e: unknown) => {
        assert.ok(e instanceof StatusError);
        assert.equal(e.status.message, 'Apply failed with 3 conflicts: conflicts with "one":\n- .metadata.labels.team\n- .spec.suspend\n- .spec.commit.idleSeconds');
        assert.deepEqual(e.status.details?.causes?.map((c) => c.field), ['.metadata.labels.team', '.spec.suspend', '.spec.commit.idleSeconds']);
        return true;
      },
    );
    const forced = run(o, gt({ suspend: false }), 'two', true);
    assert.equal(forced.spec.suspend, false);
    const one = decodeManagedFields(forced.metadata.managedFields).get(managerId('one', 'Apply', '', ''))!;
    assert.equal(one.set.has([{ kind: 'f', name: 'spec' }, { kind: 'f', name: 'suspend' }]), false);
  });

  test('a struct the applier stops sending goes whole unless someone else owns part of it', () => {
    let o = run(undefined, gt({ commit: { idleSeconds: 7, mode: 'OnRequest' } }), 'one');
    o = run(o, gt({ commit: { mode: 'OnRequest' } }), 'two');
    o = run(o, gt({}), 'one');
    assert.deepEqual(o.spec.commit, { mode: 'OnRequest' });
    o = run(o, gt({}), 'two');
    assert.equal(o.spec.commit, undefined);
  });

  test('an object nobody tracked is owned by before-first-apply, so taking its fields conflicts', () => {
    const untracked = { ...gt({ suspend: true }), metadata: { name: 'x', namespace: 'n', uid: 'u', resourceVersion: '3' } } as KubeObject;
    assert.throws(() => run(untracked, gt({ suspend: false }), 'kubectl-x'), /conflict with "before-first-apply" using configbutler\.ai\/v1alpha1: \.spec\.suspend$/);
  });
});
