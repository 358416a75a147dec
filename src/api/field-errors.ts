// field.Error of k8s.io/apimachinery/pkg/util/validation/field: the unit every validation rule
// returns. Rendered exactly as Kubernetes renders it, so kubectl's "The GitTarget "x" is invalid:
// spec.path: Invalid value: ..." reads the same as for built-in resources.

export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTypeInvalid'
  | 'FieldValueDuplicate'
  | 'FieldValueTooMany';

export interface FieldError {
  type: FieldErrorType;
  field: string;
  /** The offending value; omitted for Required/Forbidden/TooLong. */
  value?: unknown;
  detail?: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTypeInvalid: 'Invalid value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueTooMany: 'Too many',
};

const VALUE_LESS: ReadonlySet<FieldErrorType> = new Set(['FieldValueRequired', 'FieldValueForbidden', 'FieldValueTooLong']);

function renderValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null) return 'null';
  if (typeof v === 'object') {
    const s = JSON.stringify(v);
    return s.length > 200 ? `${s.slice(0, 200)}...` : s;
  }
  return String(v);
}

/** The cause message: `Invalid value: "x": must be ...`. */
export function fieldErrorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  if (!VALUE_LESS.has(e.type) && e.value !== undefined) s += `: ${renderValue(e.value)}`;
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** `spec.path: Invalid value: "x": must be ...` */
export function fieldErrorString(e: FieldError): string {
  return e.field ? `${e.field}: ${fieldErrorBody(e)}` : fieldErrorBody(e);
}

export const required = (field: string, detail?: string): FieldError => ({ type: 'FieldValueRequired', field, detail });
export const invalidValue = (field: string, value: unknown, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field,
  value,
  detail,
});
export const forbiddenField = (field: string, detail: string): FieldError => ({ type: 'FieldValueForbidden', field, detail });
export const notSupported = (field: string, value: unknown, supported: string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field,
  value,
  detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});
export const tooLong = (field: string, max: number): FieldError => ({
  type: 'FieldValueTooLong',
  field,
  detail: `may not be more than ${max} bytes`,
});
