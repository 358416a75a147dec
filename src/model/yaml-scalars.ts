// YAML that every Kubernetes YAML reader reads back as the same values. The `yaml` library writes
// YAML 1.2, where `yes`, `no`, `on`, `off`, `y`, `n`, `2024-01-01` or `1_000` are plain strings and
// stay unquoted; YAML 1.1 readers (Go's sigs.k8s.io/yaml behind kubectl, PyYAML) read them as
// booleans, timestamps or numbers, so `kubectl apply` of such a file fails ("cannot unmarshal bool
// into Go struct field") or changes the value. Every string scalar that either YAML 1.1 or 1.2 would
// resolve to something else is written double-quoted; all others keep their plain style.
import { Document, Scalar, isScalar, parse, visit, type ToStringOptions } from 'yaml';

const ambiguity = new Map<string, boolean>();

// Fast answers for the common shapes, so a 10,000-object snapshot (30,000 distinct names, values
// and indexes) does not parse every scalar twice. A plain scalar that starts with a letter and
// holds only letters, digits, '_', '.', '/', '-' and inner spaces resolves to something other
// than a string only as one of these words (YAML 1.1 booleans and nulls; 1.2's are a subset).
const SAFE_PLAIN = /^[A-Za-z](?:[A-Za-z0-9_./ -]*[A-Za-z0-9_./-])?$/;
const RESOLVING_WORDS = new Set(['y', 'n', 'yes', 'no', 'true', 'false', 'on', 'off', 'null']);
// Decimal digits read back as an integer in both versions.
const DIGITS = /^[0-9]+$/;

/** True when `s`, written plain, would not read back as the string `s` in YAML 1.1 or 1.2. */
export function ambiguousPlainString(s: string): boolean {
  if (SAFE_PLAIN.test(s)) return RESOLVING_WORDS.has(s.toLowerCase());
  if (DIGITS.test(s)) return true;
  let hit = ambiguity.get(s);
  if (hit !== undefined) return hit;
  hit = s === '<<' || s === '=' || !readsBackAs(s, '1.1') || !readsBackAs(s, '1.2');
  if (ambiguity.size < 10_000) ambiguity.set(s, hit);
  return hit;
}

function readsBackAs(s: string, version: '1.1' | '1.2'): boolean {
  // Only single-line strings can be written plain; anything else is quoted or block style anyway.
  if (s === '' || /[\n\r]/.test(s)) return true;
  try {
    const v: unknown = parse(`k: ${s}`, { version, uniqueKeys: false, prettyErrors: false });
    return typeof v === 'object' && v !== null && (v as Record<string, unknown>).k === s;
  } catch {
    return true; // not writable plain: the library quotes it itself
  }
}

/** Marks every ambiguous string scalar (keys and values) of `doc` to be written double-quoted. */
export function quoteAmbiguousScalars(doc: Document.Parsed | Document): void {
  visit(doc, {
    Scalar(_key, node: Scalar) {
      if (typeof node.value !== 'string' || !isScalar(node)) return;
      if (node.type === Scalar.PLAIN || node.type === undefined) {
        if (ambiguousPlainString(node.value)) node.type = Scalar.QUOTE_DOUBLE;
      }
    },
  });
}

/** `value` as YAML that YAML 1.1 and 1.2 readers read back as the same value. */
export function stringifyPortable(value: unknown, options: ToStringOptions = {}): string {
  const doc = new Document(value);
  quoteAmbiguousScalars(doc);
  return doc.toString(options);
}
