// A `set` list of plain strings (a list of finalizers) becomes one compact field-set node
// (src/registry/apply/fieldset.ts FieldSet.ofItems) instead of one element, key and Map entry per
// item. Whatever form a set takes, it must behave as the same set built item by item: the same
// fieldsV1 (text, key order, remembered text), the same members, and the same results of every
// set operation, with duplicates, unsorted items and strings that cannot be compact (spaces, `!`,
// quotes, escapes, surrogates) in the mix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FieldSet, WIDE_NODE } from '../../src/registry/apply/fieldset.js';
import { fromFieldsV1 } from '../../src/registry/apply/fieldsv1-decode.js';
import { plainItemsWork } from '../../src/registry/apply/plain-items.js';
import { field, type Path } from '../../src/registry/apply/path.js';
import type { Shape } from '../../src/registry/apply/schema.js';
import { toFieldSet } from '../../src/registry/apply/typed.js';
import { compare } from '../../src/registry/apply/compare.js';
import { knownJSON } from '../../src/storage/known-json.js';
import { finish } from '../../src/registry/apply/work.js';

const scalar: Shape = { kind: 'scalar' };
const setList: Shape = { kind: 'list', listType: 'set', keys: [], elem: scalar };
const shape: Shape = {
  kind: 'map',
  atomic: false,
  fields: new Map<string, Shape>([['metadata', { kind: 'map', atomic: false, fields: new Map([['finalizers', setList]]) }], ['tags', setList]]),
};
const FINS: Path = [field('metadata'), field('finalizers')];

/** A deterministic pseudo-random source (tests must fail the same way every time). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32;
  };
}

/** Suffixes that make an item not plain; the first two sort before the quote that ends a key. */
const ODD = [' space', '!bang', 'a"quote', 'back\\slash', '<tag>&', 'lone\ud800', 'pair\ud83d\ude00', 'tab\t'];
/** Suffixes that keep an item plain. */
const PLAIN = ['é-accent', '.x', '-y', '/z'];
const pad = (i: number) => String(i).padStart(6, '0');

/**
 * n items drawn from `pool` distinct values: duplicates when n > pool, in random order unless
 * `sorted`. One in seven carries a suffix from `odd` after the name of another (a prefix of it).
 */
function items(rnd: () => number, n: number, pool: number, odd: readonly string[], sorted = false): string[] {
  const out = Array.from({ length: n }, () => {
    const i = Math.floor(rnd() * pool);
    return odd.length && i % 7 === 0 ? `example.com/f-${pad(i - 1)}${odd[i % odd.length]}` : `example.com/f-${pad(i)}`;
  });
  return sorted ? [...new Set(out)].sort() : out;
}

/** The reference: every item inserted down its own path. */
function itemByItem(list: string[], path = FINS): FieldSet {
  const s = new FieldSet();
  for (const v of list) s.insert([...path, { kind: 'v', value: v }]);
  return s;
}

const fieldsV1 = (s: FieldSet) => JSON.stringify(s.toFieldsV1());
const pathsOf = (s: FieldSet) => JSON.stringify(s.paths());

test('plainItemsWork: plain strings sorted and unique, anything else refused', () => {
  assert.deepEqual(finish(plainItemsWork(['b', 'a', 'c', 'a', 'b'])), ['a', 'b', 'c']);
  assert.deepEqual(finish(plainItemsWork(['a', 'b', 'c'])), ['a', 'b', 'c']);
  assert.deepEqual(finish(plainItemsWork(['', 'x'])), ['', 'x']);
  for (const bad of [' space', 'bang!', 'q"', 'b\\', '<', '>', '&', 'tab\t', 'lone\ud800', 'line\u2028']) {
    assert.equal(finish(plainItemsWork(['a', bad])), undefined, JSON.stringify(bad));
  }
  assert.equal(finish(plainItemsWork(['a', 1])), undefined);
  assert.equal(finish(plainItemsWork(['a', null])), undefined);
});

test('a compact node encodes, answers and combines as the same set built item by item', { timeout: 60_000 }, () => {
  const rnd = random(20);
  let wideTexts = 0;
  for (let round = 0; round < 40; round++) {
    // Rounds of plain items only, with plain suffixes, with a space or `!`, with any odd suffix.
    const odd = [[], PLAIN, ODD.slice(0, 2), ODD][round % 4]!;
    const n = round % 5 === 0 ? WIDE_NODE + 300 : 1 + Math.floor(rnd() * 200);
    // Wide rounds keep more than WIDE_NODE distinct items (a remembered text); the others repeat many.
    const pool = n > WIDE_NODE ? 4 * n : Math.max(2, Math.floor(n * 0.8));
    const a = items(rnd, n, pool, odd, round % 3 === 0);
    const b = items(rnd, n, pool, odd);
    const compactA = toFieldSet({ metadata: { finalizers: a } }, shape);
    const compactB = toFieldSet({ metadata: { finalizers: b } }, shape);
    const refA = itemByItem(a);
    const refB = itemByItem(b);
    const what = `round ${round} (${n} items, suffixes ${JSON.stringify(odd)})`;

    // The same fieldsV1, in the same key order; a wide node remembers exactly its text.
    const encoded = compactA.toFieldsV1();
    assert.equal(JSON.stringify(encoded), fieldsV1(refA), what);
    const node = (encoded['f:metadata'] as Record<string, Record<string, unknown>>)['f:finalizers']!;
    const known = knownJSON(node);
    if (new Set(a).size >= WIDE_NODE) {
      assert.equal(known, JSON.stringify({ ...node }), what);
      wideTexts++;
    }
    // Decoding it back gives the same members.
    assert.equal(pathsOf(fromFieldsV1(encoded)), pathsOf(refA), what);

    // Membership, present and absent, before the Map of members is made.
    const probe = [...a.slice(0, 5), ...b.slice(0, 5), 'absent.example/x', ' space0', 'example.com/f-9999999'];
    for (const v of probe) {
      const p: Path = [...FINS, { kind: 'v', value: v }];
      assert.equal(toFieldSet({ metadata: { finalizers: a } }, shape).has(p), refA.has(p), `${what}: has ${JSON.stringify(v)}`);
    }

    // Every operation, compact against compact and against item-by-item sets, either side.
    const ops: Array<[string, (x: FieldSet, y: FieldSet) => FieldSet]> = [
      ['union', (x, y) => x.union(y)],
      ['difference', (x, y) => x.difference(y)],
      ['recursiveDifference', (x, y) => x.recursiveDifference(y)],
      ['intersection', (x, y) => x.intersection(y)],
    ];
    const fresh = (): [FieldSet, FieldSet] => [toFieldSet({ metadata: { finalizers: a } }, shape), toFieldSet({ metadata: { finalizers: b } }, shape)];
    for (const [name, op] of ops) {
      const want = op(refA, refB);
      let x: FieldSet;
      let y: FieldSet;
      [x, y] = fresh();
      assert.equal(pathsOf(op(x, y)), pathsOf(want), `${what}: ${name} compact/compact`);
      [x, y] = fresh();
      assert.equal(fieldsV1(op(x, y)), fieldsV1(want), `${what}: ${name} compact/compact fieldsV1`);
      [x] = fresh();
      assert.equal(pathsOf(op(x, refB)), pathsOf(want), `${what}: ${name} compact/reference`);
      [, y] = fresh();
      assert.equal(pathsOf(op(refA, y)), pathsOf(want), `${what}: ${name} reference/compact`);
      // Decoded from its fieldsV1, as a stored object's managedFields are (a wide node of plain
      // items decodes to a compact node again: plain-items.ts itemsOfFieldsV1Work).
      [, y] = fresh();
      assert.equal(pathsOf(op(fromFieldsV1(encoded), y)), pathsOf(want), `${what}: ${name} decoded/compact`);
      assert.equal(pathsOf(op(fromFieldsV1(encoded), refB)), pathsOf(want), `${what}: ${name} decoded/reference`);
      assert.equal(fieldsV1(op(fromFieldsV1(encoded), refB)), fieldsV1(want), `${what}: ${name} decoded/reference fieldsV1`);
    }
    assert.equal(compactA.equals(refA), true, what);
    assert.equal(compactA.empty(), a.length === 0, what);
    assert.equal(compactB.equals(refA), pathsOf(refA) === pathsOf(refB), what);

    // A comparison that adds or removes the whole list names the same fields.
    const added: FieldSet = compare(undefined, { metadata: { finalizers: a } }, shape).added;
    const removed: FieldSet = compare({ metadata: { finalizers: a } }, {}, shape).removed;
    const refAdded = itemByItem(a);
    refAdded.insert([field('metadata'), field('finalizers')]);
    refAdded.insert([field('metadata')]);
    assert.equal(fieldsV1(added), fieldsV1(refAdded), `${what}: added`);
    assert.equal(fieldsV1(removed), fieldsV1(refAdded), `${what}: removed`);
  }
  assert.equal(wideTexts, 8, 'wide rounds whose remembered text was checked');
});

test('decoding fieldsV1: a wide node of plain leaves in ascending order is compact; anything else decodes key by key, to the same members', () => {
  const list = Array.from({ length: WIDE_NODE + 10 }, (_, i) => `example.com/f-${pad(i)}`);
  const node = (keys: string[], value: (k: string) => unknown = () => ({})) => ({ 'f:metadata': { 'f:finalizers': Object.fromEntries([['.', {}], ...keys.map((k) => [k, value(k)])]) } });
  const key = (v: string) => `v:${JSON.stringify(v)}`;
  const cases: Array<[string, Record<string, unknown>]> = [
    ['sorted plain leaves', node(list.map(key))],
    ['out of order', node([...list.slice(1), list[0]!].map(key))],
    ['one not plain', node([...list.slice(0, -1), 'example.com/f-zz with space'].map(key))],
    ['one with a field below it', node(list.map(key), (k) => (k === key(list[5]!) ? { 'f:x': {} } : {}))],
    ['one with "." below it', node(list.map(key), (k) => (k === key(list[7]!) ? { '.': {}, 'f:y': {} } : {}))],
  ];
  for (const [what, fv1] of cases) {
    const ref = new FieldSet();
    (function walk(o: Record<string, unknown>, path: Path) {
      for (const [k, sub] of Object.entries(o)) {
        if (k === '.') continue;
        const pe = k.startsWith('f:') ? field(k.slice(2)) : { kind: 'v' as const, value: JSON.parse(k.slice(2)) as string };
        const inner = sub as Record<string, unknown>;
        if (Object.keys(inner).length === 0 || '.' in inner) ref.insert([...path, pe]);
        walk(inner, [...path, pe]);
      }
    })(fv1, []);
    const decoded = fromFieldsV1(fv1);
    assert.equal(pathsOf(decoded), pathsOf(ref), what);
    assert.equal(decoded.equals(ref), true, what);
    // Inserting into a decoded set keeps what it had (a compact node turns into members first).
    decoded.insert([...FINS, { kind: 'v', value: 'zz.example/added' }]);
    ref.insert([...FINS, { kind: 'v', value: 'zz.example/added' }]);
    assert.equal(pathsOf(decoded), pathsOf(ref), `${what}: after an insert`);
  }
});

test('decoding lists each node\'s keys once, also a wide node without a remembered text (read from Redis)', () => {
  const list = Array.from({ length: 2 * WIDE_NODE }, (_, i) => `example.com/f-${pad(i)}`);
  // Plain items (decoded to a compact node), and with one that is not plain (decoded key by key).
  for (const finalizers of [list, [...list, 'example.com/f with space']]) {
    const set = toFieldSet({ metadata: { finalizers } }, shape);
    // As a store that keeps text hands it out: parsed, no remembered text, no decoded set.
    const encoded = JSON.parse(JSON.stringify(set.toFieldsV1())) as Record<string, Record<string, unknown>>;
    let listed = 0;
    const node = encoded['f:metadata']!['f:finalizers'] as object;
    encoded['f:metadata']!['f:finalizers'] = new Proxy(node, {
      ownKeys(t) {
        listed++;
        return Reflect.ownKeys(t);
      },
    });
    assert.equal(pathsOf(fromFieldsV1(encoded)), pathsOf(set));
    assert.equal(listed, 1, 'the wide node\'s keys are listed once (a for...in and an Object.keys listed them twice)');
  }
});

test('a compact node made into members behaves as before: inserting below it keeps every item', () => {
  const s = toFieldSet({ metadata: { finalizers: ['b', 'a'] } }, shape);
  s.insert([...FINS, { kind: 'v', value: 'c' }]);
  assert.equal(fieldsV1(s), fieldsV1(itemByItem(['a', 'b', 'c'])));
});
