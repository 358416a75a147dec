// Wide fieldsV1 nodes carry their JSON text (src/storage/known-json.ts): the text must be exactly
// what JSON.stringify writes for the node, whatever its keys hold (escapes, Go's <>& escapes, lone
// surrogates, a node that is both a member and a parent), every serializer that uses it must write
// the same bytes as JSON.stringify of the whole object, and copies share the node instead of
// copying its keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FieldSet, WIDE_NODE } from '../../src/registry/apply/fieldset.js';
import { field, type Path } from '../../src/registry/apply/path.js';
import { knownJSON } from '../../src/storage/known-json.js';
import { HashedBytes, sizeWithin, stringifySliced } from '../../src/storage/sliced-json.js';
import { shareWithPrevious } from '../../src/storage/shared-values.js';
import { cloneWork, finish } from '../../src/registry/apply/work.js';
import type { KubeObject } from '../../src/storage/types.js';

const ODD = ['a"b', 'back\\slash', '<tag>&amp;', 'line\u2028sep', 'tab\tnl\n', 'lone\ud800', 'pair\ud83d\ude00', 'é'];
const value = (i: number) => `${ODD[i % ODD.length]}-${i}`;

/** metadata.finalizers owned item by item (a wide node), and a wide map-list node that is also a member with children. */
function wideSet(n: number): FieldSet {
  const s = new FieldSet();
  const fins: Path = [field('metadata'), field('finalizers')];
  for (let i = 0; i < n; i++) s.insert([...fins, { kind: 'v', value: value(i) }]);
  const env: Path = [field('spec'), field('env')];
  s.insert(env);
  for (let i = 0; i < n; i++) {
    const item = { kind: 'k' as const, fields: [['name', value(i)]] as Array<[string, unknown]> };
    s.insert([...env, item]);
    if (i % 3 === 0) s.insert([...env, item, field('value')]);
  }
  s.insert([field('spec'), field('narrow')]);
  return s;
}

function* objects(v: unknown): Generator<Record<string, unknown>> {
  if (v === null || typeof v !== 'object') return;
  yield v as Record<string, unknown>;
  for (const x of Object.values(v)) yield* objects(x);
}

test('a wide fieldsV1 node remembers exactly the text JSON.stringify writes for it; narrow ones remember nothing', { timeout: 60_000 }, () => {
  const fieldsV1 = wideSet(WIDE_NODE + 500).toFieldsV1() as any;
  const fins = fieldsV1['f:metadata']['f:finalizers'];
  const env = fieldsV1['f:spec']['f:env'];
  assert.equal(Object.keys(fins).length, WIDE_NODE + 500);
  assert.equal(Object.keys(env)[0], '.');
  let wide = 0;
  for (const o of objects(fieldsV1)) {
    if (Object.keys(o).filter((k) => k !== '.').length >= WIDE_NODE) {
      wide++;
      assert.equal(knownJSON(o), JSON.stringify(o));
    } else assert.equal(knownJSON(o), undefined);
  }
  assert.equal(wide, 2);
  // One key fewer than the threshold: no text.
  assert.equal(knownJSON((wideSet(WIDE_NODE - 1).toFieldsV1() as any)['f:metadata']['f:finalizers']), undefined);
});

test('the store serializes an object holding wide nodes as JSON.stringify does; copies and sharing keep the node itself', { timeout: 60_000 }, async () => {
  const fieldsV1 = wideSet(3 * WIDE_NODE).toFieldsV1() as any;
  const obj = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'x', finalizers: Array.from({ length: 3 * WIDE_NODE }, (_, i) => value(i)), managedFields: [{ manager: 'm', operation: 'Apply', fieldsV1 }] },
  } as unknown as KubeObject;
  const expected = JSON.stringify(obj);
  const out = new HashedBytes();
  await stringifySliced(obj, out);
  assert.equal(Buffer.concat(out.buffers).toString('utf8'), expected);
  assert.equal(sizeWithin(fieldsV1['f:metadata']['f:finalizers'], Infinity), knownJSON(fieldsV1['f:metadata']['f:finalizers'])!.length);

  const copy = finish(cloneWork(obj)) as any;
  assert.notEqual(copy.metadata.managedFields[0].fieldsV1, fieldsV1);
  assert.equal(copy.metadata.managedFields[0].fieldsV1['f:metadata']['f:finalizers'], fieldsV1['f:metadata']['f:finalizers']);
  assert.equal(copy.metadata.managedFields[0].fieldsV1['f:spec']['f:env'], fieldsV1['f:spec']['f:env']);
  assert.equal(JSON.stringify(copy), expected);

  const parsed = JSON.parse(expected) as KubeObject;
  const shared = shareWithPrevious(structuredClone(obj), obj, Infinity) as any;
  assert.equal(shared, obj);
  assert.equal(JSON.stringify(shareWithPrevious(parsed, undefined, Infinity)), expected);
});
