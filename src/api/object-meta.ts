// ValidateObjectMeta of k8s.io/apimachinery: names, labels, annotations, finalizers.
import { type FieldError, forbiddenField, invalidValue, required, tooLong } from './field-errors.js';

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

// The messages are k8s.io/apimachinery's (kube-apiserver 1.37: lengths in bytes, every failed rule
// its own message), so a client sees exactly what kube-apiserver would answer.
const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** validation.RegexError: the message, its examples and the regex. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}
const maxLenError = (n: number) => `must be no more than ${n} bytes`;
const bytes = (s: string) => Buffer.byteLength(s);

/** validation.IsDNS1123Subdomain's messages. */
function dns1123SubdomainErrors(s: string): string[] {
  const errs: string[] = [];
  if (bytes(s) > 253) errs.push(maxLenError(253));
  if (!DNS1123_SUBDOMAIN.test(s)) errs.push(DNS1123_SUBDOMAIN_MSG);
  return errs;
}

/**
 * validation.IsLabelKey (alias IsQualifiedName): an optional DNS-subdomain prefix (at most 253
 * bytes) and `/`, then a name of at most 63 bytes. Every message that applies, in kube's order.
 */
export function labelKeyErrors(key: string): string[] {
  const errs: string[] = [];
  let name = key;
  const slash = key.indexOf('/');
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    name = key.slice(slash + 1);
    if (name.includes('/')) return [`a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
    if (prefix === '') errs.push('prefix part must be non-empty');
    else errs.push(...dns1123SubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  }
  if (name === '') errs.push('name part must be non-empty');
  else if (bytes(name) > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!QUALIFIED_NAME.test(name)) errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** validation.IsValidLabelValue. */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (bytes(value) > 63) errs.push(maxLenError(63));
  if (value !== '' && !LABEL_VALUE.test(value)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** `finalizers: false` leaves the finalizer rules to the caller (finalizerErrors, in slices). */
export function validateObjectMeta(meta: Record<string, any>, opts: { namespaced: boolean; requireName: boolean; finalizers?: boolean }): FieldError[] {
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
    for (const why of labelKeyErrors(k)) errs.push(invalidValue('metadata.labels', k, why));
    // Non-strings never get here (the schema types labels); kept as one plain message if they do.
    if (typeof v !== 'string') errs.push(invalidValue('metadata.labels', v, 'must be a string'));
    else for (const why of labelValueErrors(v)) errs.push(invalidValue('metadata.labels', v, why));
  }
  let annotationBytes = 0;
  for (const [k, v] of Object.entries((meta.annotations ?? {}) as Record<string, unknown>)) {
    for (const why of labelKeyErrors(k.toLowerCase())) errs.push(invalidValue('metadata.annotations', k, why));
    annotationBytes += Buffer.byteLength(k) + Buffer.byteLength(String(v));
  }
  if (annotationBytes > TOTAL_ANNOTATION_BYTES) errs.push(tooLong('metadata.annotations', TOTAL_ANNOTATION_BYTES));
  if (opts.finalizers !== false) {
    const work = finalizerErrors(meta, errs);
    while (!work.next().done);
  }
  return errs;
}

/**
 * The finalizer rules of validateObjectMeta, appended to `errs`, as a generator that yields every
 * 256 finalizers: a 3 MiB list holds 130,000 of them, and the registry checks them in slices
 * (src/registry/apply/work.ts) so that other requests get the event loop meanwhile.
 */
export function* finalizerErrors(meta: Record<string, any>, errs: FieldError[]): Generator<undefined, FieldError[], undefined> {
  const finalizers: unknown[] = Array.isArray(meta.finalizers) ? meta.finalizers : [];
  // While the valid names come sorted (as clients send them), each is new if it sorts after the
  // one before: no Set of 136,000 strings. The first one out of order starts the Set, from the
  // valid names so far.
  const valid: string[] = [];
  let seen: Set<string> | undefined;
  for (let i = 0; i < finalizers.length; i++) {
    if ((i & 255) === 255) yield;
    const f = finalizers[i];
    if (typeof f !== 'string' || (!plainQualifiedName(f) && labelKeyErrors(f).length > 0)) {
      errs.push(invalidValue(`metadata.finalizers[${i}]`, f, 'must be a qualified name (e.g. example.com/my-finalizer)'));
      continue;
    }
    if (!seen) {
      if (valid.length === 0 || valid[valid.length - 1]! < f) {
        valid.push(f);
        continue;
      }
      seen = new Set(valid);
    }
    if (seen.has(f)) errs.push({ type: 'FieldValueDuplicate', field: `metadata.finalizers[${i}]`, value: f });
    else seen.add(f);
  }
  return errs;
}

/** A qualified name with an optional DNS-subdomain prefix, ASCII only (so characters are bytes). */
const PLAIN_QUALIFIED_NAME = /^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\/)?(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/**
 * Whether labelKeyErrors(key) is certainly empty, by one regex and two lengths instead of its
 * slices, byte counts and three regexes: a 3 MiB list has 136,000 finalizers to check. False
 * means "ask labelKeyErrors" (which also words the errors). Keys longer than any valid one never
 * reach the regex.
 */
function plainQualifiedName(key: string): boolean {
  if (key.length > 253 + 1 + 63 || !PLAIN_QUALIFIED_NAME.test(key)) return false;
  const slash = key.indexOf('/');
  return slash <= 253 && key.length - slash - 1 <= 63;
}

/**
 * ValidateNoNewFinalizers of k8s.io/apimachinery, for an update of an object being deleted: the
 * finalizers it adds, sorted and once each, in Go's %#v of a []string as kube-apiserver words it
 * (`found new finalizers []string{"a", "b"}`; test/cluster/parity-differential.test.ts).
 */
export function newFinalizersError(oldFinalizers: readonly string[] = [], newFinalizers: readonly string[] = []): FieldError | undefined {
  const had = new Set(oldFinalizers);
  const added = [...new Set(newFinalizers.filter((f) => !had.has(f)))].sort();
  if (added.length === 0) return undefined;
  const goList = `[]string{${added.map((f) => JSON.stringify(f)).join(', ')}}`;
  return forbiddenField('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers ${goList}`);
}
