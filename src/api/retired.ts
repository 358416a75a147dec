// Retiring a field: keep it in the schema for at least one release, refused with a message that
// names its replacement (validation.ts RETIRED), then remove it. Example:
//   oldName: retiredField('use spec.newName instead'),
import { Type, type TSchema } from '@sinclair/typebox';
import { RETIRED } from './validation.js';

export function retiredField(replacement: string): TSchema {
  return Type.Optional(Type.Unknown({ description: `Retired: ${replacement}. Setting it is refused.`, [RETIRED]: replacement }));
}
