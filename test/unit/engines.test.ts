// The project declares Node >= 20.10 (package.json engines): every installed package must accept
// that Node too, or `npm ci` warns EBADENGINE on a supported Node (cookie@2 via fastify's
// light-my-request wanted Node 22; jsep 1.6 wants 20.16). package.json `overrides` pin versions
// that support it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

type V = [number, number, number];
const parse = (s: string): V => {
  const [a = 0, b = 0, c = 0] = s.replace(/^v/, '').split('.').map((x) => (x === 'x' || x === '*' ? 0 : Number(x)));
  return [a, b, c];
};
const cmp = (a: V, b: V) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether Node `v` satisfies an npm engines range (the forms used in practice: >=, >, <, <=, ^, ~, x-ranges, ||). */
export function admits(range: string, v: V): boolean {
  return range.split('||').some((alt) => {
    const parts = alt.trim().replace(/(>=|<=|>|<|\^|~|=)\s+/g, '$1').split(/\s+/).filter(Boolean);
    return parts.every((p) => {
      const m = /^(>=|<=|>|<|\^|~|=)?(.+)$/.exec(p)!;
      const op = m[1] ?? '';
      const w = parse(m[2]!);
      const fields = m[2]!.split('.').filter((x) => x !== 'x' && x !== '*').length;
      switch (op) {
        case '>=': return cmp(v, w) >= 0;
        case '>': return cmp(v, w) > 0;
        case '<': return cmp(v, w) < 0;
        case '<=': return cmp(v, w) <= 0;
        case '^': return v[0] === w[0] && cmp(v, w) >= 0;
        case '~': return v[0] === w[0] && v[1] === w[1] && cmp(v, w) >= 0;
        default: return fields === 0 || (v[0] === w[0] && (fields < 2 || v[1] === w[1]) && (fields < 3 || v[2] === w[2]));
      }
    });
  });
}

test('the range check itself', () => {
  assert.ok(admits('>=20.10', [20, 10, 0]));
  assert.ok(!admits('>=22', [20, 10, 0]));
  assert.ok(!admits('>= 20.16.0', [20, 10, 0]));
  assert.ok(admits('^16 || ^18 || >=20', [20, 10, 0]));
  assert.ok(admits('4.x || >=6.0.0', [20, 10, 0]));
  assert.ok(!admits('^18', [20, 10, 0]));
});

test('every package in package-lock.json accepts the oldest Node the project supports', () => {
  const pkg = JSON.parse(readFileSync(`${REPO}package.json`, 'utf8'));
  const oldest = parse(String(pkg.engines.node).replace(/^>=\s*/, ''));
  assert.deepEqual(oldest, [20, 10, 0]);
  const lock = JSON.parse(readFileSync(`${REPO}package-lock.json`, 'utf8'));
  const refusing = Object.entries(lock.packages as Record<string, { engines?: { node?: string } | string[] }>)
    .filter(([name, p]) => name !== '' && p.engines && !Array.isArray(p.engines) && p.engines.node && !admits(p.engines.node, oldest))
    .map(([name, p]) => `${name} (node ${(p.engines as { node: string }).node})`);
  assert.deepEqual(refusing, []);
});
