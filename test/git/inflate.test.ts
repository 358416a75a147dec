// The pack reader's small-object decoder (src/git/inflate.ts) against node's zlib: every
// compression level and strategy zlib has, over text, random and repetitive data (stored, fixed
// and dynamic blocks); a corrupted stream is never answered with other bytes than zlib's own, and
// what the decoder refuses is left to zlib (undefined), never guessed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, deflateSync, inflateSync } from 'node:zlib';
import { inflateSmall } from '../../src/git/inflate.js';

function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function samples(): Array<[string, Buffer]> {
  const rnd = random(7);
  const yaml = (i: number) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\n  namespace: team-${i % 7}\ndata:\n  index: "${i}"\n  value: value-${i}\n`;
  const noise = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
  const words = (n: number) => Buffer.from(Array.from({ length: n }, () => ['key', 'value', ': ', '\n', '  ', 'name', '-'][Math.floor(rnd() * 7)]).join(''));
  return [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from('x')],
    ['a manifest', Buffer.from(yaml(1))],
    ['many manifests', Buffer.from(Array.from({ length: 300 }, (_, i) => yaml(i)).join('---\n'))],
    ['random bytes', noise(3000)],
    ['random bytes past one stored block', noise(70_000)],
    ['words', words(5000)],
    ['one byte repeated', Buffer.alloc(40_000, 0x61)],
    ['a long match distance', Buffer.concat([noise(20_000), noise(2000), Buffer.from(yaml(3)), noise(9000), Buffer.from(yaml(3))])],
  ];
}

test('decodes what zlib encodes, at every level and strategy, byte for byte', () => {
  const strategies = [constants.Z_DEFAULT_STRATEGY, constants.Z_FILTERED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE, constants.Z_FIXED];
  let decoded = 0;
  for (const [what, data] of samples()) {
    for (let level = 0; level <= 9; level++) {
      for (const strategy of strategies) {
        const z = deflateSync(data, { level, strategy });
        // Inside a larger buffer, as in a pack: the stream starts at an offset and other bytes follow.
        const pack = Buffer.concat([Buffer.from('PACK....'), z, Buffer.from('next object')]);
        const got = inflateSmall(pack, 8, data.length);
        assert.ok(got, `${what}, level ${level}, strategy ${strategy}: decoded`);
        assert.ok(got.equals(data), `${what}, level ${level}, strategy ${strategy}: the same bytes`);
        decoded++;
      }
    }
  }
  assert.equal(decoded, samples().length * 10 * strategies.length);
});

test('a stated size that is not the content\'s is refused', () => {
  const data = Buffer.from('apiVersion: v1\nkind: ConfigMap\n');
  const z = deflateSync(data);
  assert.equal(inflateSmall(z, 0, data.length - 1), undefined);
  assert.equal(inflateSmall(z, 0, data.length + 1), undefined);
  assert.ok(inflateSmall(z, 0, data.length)?.equals(data));
});

test('corrupted streams: refused, or exactly what zlib makes of them', () => {
  const rnd = random(11);
  const data = Buffer.from(Array.from({ length: 40 }, (_, i) => `  key-${i}: value-${i}\n`).join(''));
  let refused = 0;
  for (let n = 0; n < 3000; n++) {
    const z = Buffer.from(deflateSync(data, { level: 1 + (n % 9), strategy: n % 3 === 0 ? constants.Z_FIXED : constants.Z_DEFAULT_STRATEGY }));
    const flips = 1 + Math.floor(rnd() * 3);
    for (let f = 0; f < flips; f++) z[Math.floor(rnd() * z.length)] ^= 1 << Math.floor(rnd() * 8);
    const got = inflateSmall(z, 0, data.length);
    if (got === undefined) {
      refused++;
      continue;
    }
    let expected: Buffer | undefined;
    try {
      expected = inflateSync(z);
    } catch {
      expected = undefined;
    }
    assert.ok(expected && got.equals(expected), `corruption ${n}: the decoder answered bytes zlib does not`);
  }
  assert.ok(refused > 2500, `most corruptions are refused (${refused} of 3000)`);
  // A truncated stream, a preset dictionary, and something that is not zlib at all.
  const z = deflateSync(data);
  assert.equal(inflateSmall(z.subarray(0, z.length - 5), 0, data.length), undefined);
  assert.equal(inflateSmall(deflateSync(data, { dictionary: Buffer.from('key-value') }), 0, data.length), undefined);
  assert.equal(inflateSmall(Buffer.from('not zlib at all'), 0, 10), undefined);
});
