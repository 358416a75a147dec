// JSON.parse in pieces (src/apiserver/json-pieces.ts): a body's big lists are parsed a run of items
// at a time between yields, and the result is JSON.parse's, value for value, or JSON.parse's own
// error. The decoding entry (src/apiserver/decode.ts decodeJSONInSlices) is what request bodies take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJSONInSlices, decodeYAMLInSlices, scanJSONWork } from '../../src/apiserver/decode.js';
import { JSONIndex, PIECE_CHARS, parseJSONWork } from '../../src/apiserver/json-pieces.js';
import { finish } from '../../src/registry/apply/work.js';
import { commitRequestWithFinalizers, deploymentWithEnv, fill } from '../security/list-bodies.js';

/** The index the scan builds for `text`, and the parse's steps: the value and the number of yields. */
function pieces(text: string): { value: unknown; yields: number } {
  const index = new JSONIndex();
  finish(scanJSONWork(text, 'body', index));
  const w = parseJSONWork(text, index);
  let yields = 0;
  for (let r = w.next(); ; r = w.next()) {
    if (r.done) return { value: r.value, yields };
    yields++;
  }
}

const big = <T>(n: number, item: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => item(i));
const pad = 'x'.repeat(40);

test('a body at the limit made of one list is parsed in runs of items, to the value JSON.parse gives', () => {
  const env = fill((k) => deploymentWithEnv('envs', k), 3 * 1024 * 1024 * 0.9).text;
  const r = pieces(env);
  assert.deepEqual(r.value, JSON.parse(env));
  // One yield per run of about PIECE_CHARS characters: each JSON.parse call is a small share of the body.
  assert.ok(r.yields >= Math.floor(env.length / PIECE_CHARS) - 1, `${r.yields} yields for ${env.length} characters`);
  const finalizers = JSON.stringify(commitRequestWithFinalizers('many', 136_000));
  const f = pieces(finalizers);
  assert.deepEqual(f.value, JSON.parse(finalizers));
  assert.ok(f.yields >= Math.floor(finalizers.length / PIECE_CHARS) - 1);
});

test('nested big containers, big objects, awkward strings and whitespace give JSON.parse\'s value', () => {
  const texts = [
    // A big object whose values are big lists, and a big list of big lists.
    JSON.stringify({ a: big(20_000, (i) => ({ name: `n${i}`, v: i })), b: { c: big(20_000, (i) => [i, `${i}`]) }, d: 1 }),
    JSON.stringify(big(3, () => big(40_000, (i) => i * 1.5))),
    // An object of 30,000 keys, among them integer-like ones (JS orders them first, as JSON.parse does).
    JSON.stringify(Object.fromEntries(big(30_000, (i) => [i % 3 === 0 ? String(i) : `k${i}`, pad]))),
    // Strings with brackets, commas, quotes, escaped backslashes and unicode escapes.
    JSON.stringify(big(20_000, (i) => `[{,"\\\\}]\u00e9\ud83d\ude00 ${i}\\"`)),
    // JSON whitespace everywhere, and a big list's items spread over lines.
    ` \n\t{ "items" :\r\n [ ${big(20_000, (i) => `{ "i" : ${i} , "s" : "${pad}" }`).join(' ,\n ')} ] , "z" : null } \n`,
  ];
  for (const text of texts) {
    assert.ok(text.length > 2 * PIECE_CHARS);
    const r = pieces(text);
    assert.deepEqual(r.value, JSON.parse(text));
    assert.ok(r.yields >= 2, `parsed in pieces (${r.yields} yields), not by the fallback`);
  }
});

test('__proto__ is an own key, as JSON.parse makes it, in a run and as a big child', () => {
  const inRun = `{${big(20_000, (i) => `"k${i}": "${pad}"`).join(',')}, "__proto__": {"polluted": true}}`;
  const asBig = `{"__proto__": [${big(20_000, (i) => `"${pad}${i}"`).join(',')}], "x": 1}`;
  for (const text of [inRun, asBig]) {
    const r = pieces(text);
    assert.ok(r.yields >= 1, 'parsed in pieces, not by the fallback');
    const v = r.value as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.ok(Object.prototype.hasOwnProperty.call(v, '__proto__'));
    assert.deepEqual(v, JSON.parse(text));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  }
});

test('text that is not JSON gets JSON.parse\'s own error; duplicate keys its last-one-wins value', () => {
  const items = big(20_000, (i) => `"${pad}${i}"`).join(',');
  const bad = [
    `[${items},]`, // trailing comma
    `[${items},,"a"]`, // empty item
    `[${items}}`, // brackets of the wrong kind
    `[${items}] x`, // text after the value
    `{"a" [${items}]}`, // no colon
    `{"a": [${items}], }`,
    `[${items}`, // unclosed
  ];
  for (const text of bad) {
    let expected = '';
    try {
      JSON.parse(text);
    } catch (e) {
      expected = (e as Error).message;
    }
    assert.notEqual(expected, '', 'JSON.parse refuses it');
    assert.throws(() => pieces(text), (e: Error) => e instanceof SyntaxError && e.message === expected);
  }
  const dup = `{${big(20_000, (i) => `"k${i % 15_000}": ${i}`).join(',')}}`;
  assert.deepEqual(pieces(dup).value, JSON.parse(dup));
});

test('request bodies take the pieces: decodeJSONInSlices and decodeYAMLInSlices of a JSON body', async () => {
  const text = JSON.stringify(commitRequestWithFinalizers('many', 50_000));
  const d = await decodeJSONInSlices(Buffer.from(text), 'object provided');
  assert.deepEqual(d, { value: JSON.parse(text), duplicates: [] });
  assert.deepEqual(await decodeYAMLInSlices(Buffer.from(text), 'object provided'), { value: JSON.parse(text), duplicates: [] });
  const broken = `${text.slice(0, -1)},}`;
  const parseError = (() => {
    try {
      JSON.parse(broken);
    } catch (e) {
      return (e as Error).message;
    }
  })();
  await assert.rejects(decodeJSONInSlices(Buffer.from(broken), 'object provided'), (e: Error & { status?: { reason?: string; code?: number } }) => {
    assert.deepEqual([e.status?.code, e.status?.reason, e.message], [400, 'BadRequest', `the object provided could not be decoded as JSON: ${parseError}`]);
    return true;
  });
});
