// A direct writer for the YAML of a new file, for the shapes nearly every manifest has: maps,
// sequences, plain or double-quoted one-line strings, literal block strings, numbers, booleans,
// null. It writes exactly what the yaml Document path (manifest-yaml.ts encodeObject: YAML_OPTIONS
// plus quoteAmbiguousScalars) writes — test/git/yaml-direct.test.ts compares the two on thousands
// of generated objects — at a tenth of its cost, which was most of a 10,000-object snapshot's
// commit time. Anything outside those shapes (non-ASCII text, strings the library would quote for
// its own reasons, block strings that need an indicator, sequences of sequences …) answers
// undefined, and the caller takes the Document path.
import { ambiguousPlainString } from '../model/yaml-scalars.js';

const PRINTABLE = /^[\x20-\x7e]*$/;
const PRINTABLE_LINES = /^[\x20-\x7e\n]*$/;
// Plain one-line scalars the library writes as they are (checked against it by the test).
const PLAIN = /^(?:[A-Za-z0-9_./]|-(?=[^ ]))[A-Za-z0-9 _./:=,+@()-]*$/;
const KEY = /^[A-Za-z0-9_./][A-Za-z0-9_./-]*$/;
const NUMBER = /^-?\d{1,15}(\.\d{1,15})?$/;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

function oneLine(s: string): string | undefined {
  if (s === '') return '""';
  if (!PRINTABLE.test(s)) return undefined;
  if (ambiguousPlainString(s)) return s.includes('"') || s.includes('\\') ? undefined : `"${s}"`;
  if (!PLAIN.test(s) || s.endsWith(' ') || s.endsWith(':') || s.includes(': ') || s.includes(' #')) return undefined;
  return s;
}

function key(k: string): string | undefined {
  if (!KEY.test(k)) return undefined;
  return ambiguousPlainString(k) ? `"${k}"` : k;
}

function scalar(v: unknown): string | undefined {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || Object.is(v, -0)) return undefined;
    const s = String(v);
    return NUMBER.test(s) ? s : undefined;
  }
  if (typeof v === 'string' && !v.includes('\n')) return oneLine(v);
  return undefined;
}

/** `|` (one final newline) or `|-` (none), lines at `indent`; undefined when it needs more than that. */
function literal(s: string, indent: string): string | undefined {
  if (!PRINTABLE_LINES.test(s) || s.startsWith(' ') || s.startsWith('\n') || s.endsWith('\n\n')) return undefined;
  const clip = s.endsWith('\n');
  const lines = (clip ? s.slice(0, -1) : s).split('\n');
  if (lines.some((l) => l.endsWith(' '))) return undefined;
  return (clip ? '|' : '|-') + lines.map((l) => (l === '' ? '\n' : `\n${indent}${l}`)).join('');
}

function writeMap(o: Record<string, unknown>, indent: string, out: string[]): boolean {
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined) continue;
    const kk = key(k);
    if (kk === undefined) return false;
    if (isPlainObject(v)) {
      if (Object.values(v).every((x) => x === undefined)) {
        if (Object.keys(v).length) return false;
        out.push(`${indent}${kk}: {}`);
      } else {
        out.push(`${indent}${kk}:`);
        if (!writeMap(v, `${indent}  `, out)) return false;
      }
    } else if (Array.isArray(v)) {
      if (v.length === 0) out.push(`${indent}${kk}: []`);
      else {
        out.push(`${indent}${kk}:`);
        if (!writeSeq(v, `${indent}  `, out)) return false;
      }
    } else if (typeof v === 'string' && v.includes('\n')) {
      const block = literal(v, `${indent}  `);
      if (block === undefined) return false;
      out.push(`${indent}${kk}: ${block}`);
    } else {
      const s = scalar(v);
      if (s === undefined) return false;
      out.push(`${indent}${kk}: ${s}`);
    }
  }
  return true;
}

function writeSeq(a: unknown[], indent: string, out: string[]): boolean {
  for (const v of a) {
    if (isPlainObject(v)) {
      const entries: string[] = [];
      if (!writeMap(v, `${indent}  `, entries) || entries.length === 0) return false;
      entries[0] = `${indent}- ${entries[0]!.slice(indent.length + 2)}`;
      out.push(...entries);
    } else {
      const s = scalar(v);
      if (s === undefined) return false;
      out.push(`${indent}- ${s}`);
    }
  }
  return true;
}

/** The YAML of a new file holding `ordered` (already in writing order), or undefined when only the Document path can write it. */
export function writeDirect(ordered: Record<string, unknown>): string | undefined {
  const out: string[] = [];
  if (!writeMap(ordered, '', out) || out.length === 0) return undefined;
  return out.join('\n') + '\n';
}
