import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFieldSelector, parseLabelSelector } from '../../src/apiserver/selectors.js';
import { StatusError } from '../../src/api/status.js';

const labels = { app: 'demo', tier: 'web' };

test('label selector operators', () => {
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['app=demo', true],
    ['app==demo', true],
    ['app!=demo', false],
    ['app!=other', true],
    ['app in (demo,x)', true],
    ['app notin (demo,x)', false],
    ['app', true],
    ['!app', false],
    ['!missing', true],
    ['missing', false],
    ['app=demo,tier=web', true],
    ['app=demo,tier=db', false],
    ['missing!=x', true],
    ['missing notin (x)', true],
  ];
  for (const [sel, want] of cases) assert.equal(parseLabelSelector(sel).matches(labels), want, sel);
});

test('unparsable label selectors are 400 BadRequest', () => {
  for (const bad of ['a===b', 'app in demo', '=x', 'a b', 'app=(x']) {
    assert.throws(
      () => parseLabelSelector(bad),
      (e: unknown) => e instanceof StatusError && e.status.code === 400 && e.status.reason === 'BadRequest',
      bad,
    );
  }
});

test('field selectors: supported fields, pinned name, unsupported field', () => {
  const supported = new Set(['metadata.name', 'metadata.namespace', 'spec.branch']);
  const fs = parseFieldSelector('metadata.name=demo,spec.branch!=x', supported);
  assert.equal(fs.name, 'demo');
  const read = (o: Record<string, string>) => (f: string) => o[f];
  assert.equal(fs.matches(read({ 'metadata.name': 'demo', 'spec.branch': 'main' })), true);
  assert.equal(fs.matches(read({ 'metadata.name': 'demo', 'spec.branch': 'x' })), false);
  assert.throws(
    () => parseFieldSelector('spec.url=x', supported),
    (e: unknown) => e instanceof StatusError && e.status.code === 400 && e.status.message === 'field label not supported: spec.url',
  );
});
