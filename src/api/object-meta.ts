// ValidateObjectMeta of k8s.io/apimachinery: names, labels, annotations, finalizers.
import { type FieldError, invalidValue, required, tooLong } from './field-errors.js';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const TOTAL_ANNOTATION_BYTES = 256 * 1024;

export const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export function isDNS1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

export function isDNS1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

function qualifiedNameError(key: string): string | undefined {
  const slash = key.indexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : ['', key];
  if (slash >= 0 && (prefix === '' || !isDNS1123Subdomain(prefix))) return 'prefix part must be a lowercase RFC 1123 subdomain';
  if (name === '') return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

export function validateObjectMeta(meta: Record<string, any>, opts: { namespaced: boolean; requireName: boolean }): FieldError[] {
  const errs: FieldError[] = [];
  const name = meta.name;
  if (opts.requireName && (typeof name !== 'string' || name === '')) {
    errs.push(required('metadata.name', 'name or generateName is required'));
  } else if (typeof name === 'string' && name !== '' && !isDNS1123Subdomain(name)) {
    errs.push(invalidValue('metadata.name', name, DNS1123_SUBDOMAIN_MSG));
  }
  if (typeof meta.generateName === 'string' && meta.generateName !== '') {
    const probe = meta.generateName.replace(/-+$/, '') || 'a';
    if (!isDNS1123Subdomain(`${probe}a`)) errs.push(invalidValue('metadata.generateName', meta.generateName, DNS1123_SUBDOMAIN_MSG));
  }
  if (opts.namespaced && typeof meta.namespace === 'string' && meta.namespace !== '' && !isDNS1123Label(meta.namespace)) {
    errs.push(invalidValue('metadata.namespace', meta.namespace, 'a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\''));
  }
  for (const [k, v] of Object.entries((meta.labels ?? {}) as Record<string, unknown>)) {
    const why = qualifiedNameError(k);
    if (why) errs.push(invalidValue(`metadata.labels`, k, why));
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
      errs.push(
        invalidValue(
          `metadata.labels`,
          v,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters",
        ),
      );
    }
  }
  let annotationBytes = 0;
  for (const [k, v] of Object.entries((meta.annotations ?? {}) as Record<string, unknown>)) {
    const why = qualifiedNameError(k.toLowerCase());
    if (why) errs.push(invalidValue('metadata.annotations', k, why));
    annotationBytes += Buffer.byteLength(k) + Buffer.byteLength(String(v));
  }
  if (annotationBytes > TOTAL_ANNOTATION_BYTES) errs.push(tooLong('metadata.annotations', TOTAL_ANNOTATION_BYTES));
  const finalizers: unknown[] = Array.isArray(meta.finalizers) ? meta.finalizers : [];
  const seen = new Set<string>();
  finalizers.forEach((f, i) => {
    if (typeof f !== 'string' || qualifiedNameError(f)) {
      errs.push(invalidValue(`metadata.finalizers[${i}]`, f, 'must be a qualified name (e.g. example.com/my-finalizer)'));
    } else if (seen.has(f)) {
      errs.push({ type: 'FieldValueDuplicate', field: `metadata.finalizers[${i}]`, value: f });
    } else seen.add(f);
  });
  return errs;
}
