import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFieldSelector, parseLabelSelector } from '../../src/api/selectors.js';
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

test('field selector values take the escapes fields.ParseSelector accepts: \\, \\= \\\\ (and nothing is trimmed)', () => {
  const supported = new Set(['metadata.name', 'metadata.namespace']);
  const value = (raw: string) => parseFieldSelector(raw, supported).requirements.map((r) => [r.field, r.op, r.value]);
  assert.deepEqual(value('metadata.name=\\,'), [['metadata.name', '=', ',']]);
  assert.deepEqual(value('metadata.name=\\='), [['metadata.name', '=', '=']]);
  assert.deepEqual(value('metadata.name=\\\\'), [['metadata.name', '=', '\\']]);
  assert.deepEqual(value('metadata.name==a\\,b,metadata.namespace!=x'), [['metadata.name', '=', 'a,b'], ['metadata.namespace', '!=', 'x']]);
  assert.deepEqual(value('metadata.name=x '), [['metadata.name', '=', 'x ']]);
  // Empty terms are skipped, as kube does: "metadata.name=," is the empty name, "," selects everything.
  assert.deepEqual(value('metadata.name=,'), [['metadata.name', '=', '']]);
  assert.deepEqual(value(','), []);
  assert.equal(parseFieldSelector('metadata.name=\\,', supported).matches((f) => (f === 'metadata.name' ? ',' : undefined)), true);
  assert.equal(parseFieldSelector('metadata.name=\\,', supported).matches((f) => (f === 'metadata.name' ? 'a' : undefined)), false);
  const refused: Array<[string, string]> = [
    ['metadata.name=\\a', 'invalid field selector: invalid escape sequence: \\a'],
    ['metadata.name=x\\', 'invalid field selector: invalid escape sequence: \\'],
    ['metadata.name=a=b', 'invalid field selector: unescaped character in value: 61'],
    ['metadata.name', "invalid selector: 'metadata.name'; can't understand 'metadata.name'"],
    ['metadata.name =x', 'field label not supported: metadata.name '],
  ];
  for (const [raw, message] of refused) {
    assert.throws(
      () => parseFieldSelector(raw, supported),
      (e: unknown) => e instanceof StatusError && e.status.code === 400 && e.status.reason === 'BadRequest' && e.status.message === message,
      raw,
    );
  }
});

test('label selector keys are label keys: name part at most 63 bytes, prefix a DNS subdomain of at most 253, with kube\'s message', () => {
  assert.equal(parseLabelSelector(`${'a'.repeat(63)}=x`).requirements[0]!.key, 'a'.repeat(63));
  const prefix253 = `${'b'.repeat(63)}.${'b'.repeat(63)}.${'b'.repeat(63)}.${'b'.repeat(61)}`;
  assert.equal(parseLabelSelector(`${prefix253}/a`).requirements[0]!.op, 'exists');
  const refused: Array<[string, string]> = [
    [`${'a'.repeat(64)}=x`, `unable to parse requirement: <nil>: Invalid value: "${'a'.repeat(64)}": name part must be no more than 63 bytes`],
    ['a'.repeat(64), `unable to parse requirement: <nil>: Invalid value: "${'a'.repeat(64)}": name part must be no more than 63 bytes`],
    [`${'b'.repeat(254)}/a=x`, `unable to parse requirement: <nil>: Invalid value: "${'b'.repeat(254)}/a": prefix part must be no more than 253 bytes`],
    [
      `-${'a'.repeat(64)}`,
      `unable to parse requirement: <nil>: Invalid value: "-${'a'.repeat(64)}": name part must be no more than 63 bytes; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
    ],
  ];
  for (const [raw, message] of refused) {
    assert.throws(
      () => parseLabelSelector(raw),
      (e: unknown) => e instanceof StatusError && e.status.code === 400 && e.status.message === message,
      raw,
    );
  }
});
