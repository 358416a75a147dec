// The retirement policy: a retired field is refused in every fieldValidation mode, naming its replacement.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { compileSchema } from '../../src/api/validation.js';
import { retiredField } from '../../src/api/retired.js';
import { fieldErrorString } from '../../src/api/field-errors.js';

const schema = Type.Object(
  {
    spec: Type.Object(
      {
        newName: Type.Optional(Type.String()),
        oldName: retiredField('use spec.newName instead'),
        items: Type.Optional(Type.Array(Type.Object({ keep: Type.Optional(Type.String()), legacy: retiredField('drop it; items are matched by keep') }, { additionalProperties: false }))),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

test('a retired field is refused under Strict, Warn and Ignore, naming its replacement', () => {
  const v = compileSchema(schema);
  for (const mode of ['Strict', 'Warn', 'Ignore'] as const) {
    const { errors } = v.validate({ spec: { oldName: 'x', items: [{ keep: 'a' }, { legacy: 1 }] } }, mode);
    assert.deepEqual(errors.map(fieldErrorString), [
      'spec.oldName: Forbidden: field is retired: use spec.newName instead',
      'spec.items[1].legacy: Forbidden: field is retired: drop it; items are matched by keep',
    ], mode);
  }
});

test('objects without the retired field are untouched', () => {
  const v = compileSchema(schema);
  assert.deepEqual(v.validate({ spec: { newName: 'y', items: [{ keep: 'a' }] } }, 'Strict').errors, []);
});
