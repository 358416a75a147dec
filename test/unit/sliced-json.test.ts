// The embedded store's serializer (src/storage/sliced-json.ts) writes exactly what JSON.stringify
// writes, and lists the keys of a wide object once per log record: durable-log.ts measures the
// record with sizeWithin, then a Writer serializes it. Before, a bound remembered at about the
// limit let every ancestor's estimate, and the object's own, list all its keys again: five
// listings of 150,000 keys (~50 ms each) per record, which made a wide append cost 5-7 times one
// JSON.stringify of it (test/storage/embedded-snapshot-delay.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HashedBytes, sizeWithin, stringifySliced } from '../../src/storage/sliced-json.js';

/** The limit durable-log.ts measures a record against (INLINE_RECORD_CHARS). */
const INLINE = 32 * 1024;

async function sliced(v: unknown): Promise<string> {
  const out = new HashedBytes();
  await stringifySliced(v, out);
  return Buffer.concat(out.buffers).toString('utf8');
}

/** A fieldsV1-shaped object of `n` keys, each holding its own empty object (as a parsed one does). */
function wideLeaves(n: number): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`v:"example.com/f-${i}"`, {}]));
}

test('members that look empty are written as JSON.stringify writes them', { timeout: 30_000 }, async () => {
  const hidden = {};
  Object.defineProperty(hidden, 'secret', { value: 1, enumerable: false });
  const hiddenToJSON = {};
  Object.defineProperty(hiddenToJSON, 'toJSON', { value: () => 'hidden', enumerable: false });
  const odd: Record<string, unknown> = {
    plain: {},
    nullProto: Object.create(null),
    withToJSON: { toJSON: () => 'replaced' },
    inheritedToJSON: Object.create({ toJSON: () => 42 }),
    inheritedKey: Object.create({ inherited: 1 }),
    nonEnumerable: hidden,
    nonEnumerableToJSON: hiddenToJSON,
    symbolKey: { [Symbol('s')]: 1 },
    date: new Date(0),
    array: [],
    undefinedMember: undefined,
  };
  // Wide enough to be walked member by member (past sliced-json.ts SMALL).
  const wide = { ...wideLeaves(3_000), ...odd };
  const record = { s: 1, obj: { metadata: { managedFields: [{ fieldsV1: { 'f:metadata': wide } }] } } };
  assert.equal(await sliced(record), JSON.stringify(record));
});

test('a log record lists the keys of its wide object once, from the size estimate to the last byte', { timeout: 30_000 }, async () => {
  for (const n of [5_000, 150_000]) {
    let listed = 0;
    const node = new Proxy(wideLeaves(n), {
      ownKeys(t) {
        listed++;
        return Reflect.ownKeys(t);
      },
    });
    const record = { s: 1, obj: { metadata: { name: 'x', managedFields: [{ manager: 'm', fieldsV1: { 'f:metadata': { 'f:finalizers': node } } }] } } };
    assert.equal(sizeWithin(record, INLINE), Infinity);
    const text = await sliced(record);
    assert.equal(listed, 1, `${n} keys: listed ${listed} times`);
    assert.equal(text, JSON.stringify(record));
  }
});
