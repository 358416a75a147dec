// Label and field selectors with Kubernetes syntax. A parse error is a 400 BadRequest.
import { badRequest } from './status.js';
import { labelKeyErrors } from './object-meta.js';

type Labels = Record<string, string> | undefined;

export interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=';
  values: string[];
}

export interface LabelSelector {
  empty: boolean;
  requirements: Requirement[];
  matches(labels: Labels): boolean;
}

const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** A key must be a valid label key; kube's parser answers with the field error it builds for it. */
function checkKey(k: string): string {
  const errs = labelKeyErrors(k);
  if (errs.length > 0) throw badRequest(`unable to parse requirement: <nil>: Invalid value: ${JSON.stringify(k)}: ${errs.join('; ')}`);
  return k;
}
function checkValue(v: string, raw: string): string {
  if (!VALUE.test(v) || v.length > 63) throw badRequest(`unable to parse requirement: invalid label value "${v}" in selector "${raw}"`);
  return v;
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

export function parseLabelSelector(raw: string | null | undefined): LabelSelector {
  const reqs: Requirement[] = [];
  const s = (raw ?? '').trim();
  if (s !== '') {
    for (const termRaw of splitTerms(s)) {
      const term = termRaw.trim();
      let m: RegExpExecArray | null;
      if ((m = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term))) {
        const values = m[3]!.split(',').map((v) => checkValue(v.trim(), s));
        reqs.push({ key: checkKey(m[1]!), op: m[2] as 'in' | 'notin', values });
      } else if ((m = /^!\s*([^=!\s]+)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!), op: '!exists', values: [] });
      } else if ((m = /^([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!), op: m[2] === '!=' ? '!=' : '=', values: [checkValue(m[3]!, s)] });
      } else if ((m = /^([^=!\s(),]+)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!), op: 'exists', values: [] });
      } else {
        throw badRequest(`unable to parse requirement: found '${term}', expected: label selector term in "${s}"`);
      }
    }
  }
  return {
    empty: reqs.length === 0,
    requirements: reqs,
    matches(labels: Labels): boolean {
      for (const r of reqs) {
        const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
        const v = has ? labels![r.key]! : undefined;
        switch (r.op) {
          case '=':
          case 'in':
            if (!has || !r.values.includes(v!)) return false;
            break;
          case '!=':
          case 'notin':
            if (has && r.values.includes(v!)) return false;
            break;
          case 'exists':
            if (!has) return false;
            break;
          case '!exists':
            if (has) return false;
            break;
        }
      }
      return true;
    },
  };
}

export interface FieldSelector {
  empty: boolean;
  requirements: Array<{ field: string; op: '=' | '!='; value: string }>;
  /** The exact name when the selector pins metadata.name (lets a handler skip a scan). */
  name?: string;
  matches(read: (field: string) => string | undefined): boolean;
}

/**
 * Splits a field selector on the commas that are not escaped (`\,` is data), keeping escapes for
 * the value's own unescaping — k8s.io/apimachinery/pkg/fields' splitTerms.
 */
function splitFieldTerms(s: string): string[] {
  if (s === '') return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const FIELD_OPERATORS = ['!=', '==', '='] as const;

/** lhs, operator and literal rhs at the first operator (the field name has no escapes), as kube's splitTerm. */
function splitFieldTerm(term: string): [string, '!=' | '==' | '=', string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of FIELD_OPERATORS) if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
  }
  return undefined;
}

/**
 * A field selector value with its escapes (`\,`, `\=`, `\\`) resolved; an unknown escape or an
 * unescaped `,` or `=` is a 400 with kube's own message (fields.UnescapeValue).
 */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') throw badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else out += c;
  }
  if (inSlash) throw badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** The terms of a field selector, parsed as fields.ParseSelector does (sorted, empty terms skipped, nothing trimmed). */
function parseFieldTerms(s: string): FieldSelector['requirements'] {
  const reqs: FieldSelector['requirements'] = [];
  for (const term of splitFieldTerms(s).sort()) {
    if (term === '') continue;
    const parts = splitFieldTerm(term);
    if (!parts) throw badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
    const [field, op, rhs] = parts;
    reqs.push({ field, op: op === '!=' ? '!=' : '=', value: unescapeFieldValue(rhs) });
  }
  return reqs;
}

/**
 * The value a field selector requires `field` to equal, if it does (fields.Selector's
 * RequiresExactMatch); undefined when it does not or does not parse.
 */
export function exactFieldMatch(raw: string | null | undefined, field: string): string | undefined {
  try {
    return parseFieldTerms(raw ?? '').find((r) => r.field === field && r.op === '=')?.value;
  } catch {
    return undefined;
  }
}

export function parseFieldSelector(raw: string | null | undefined, supported: ReadonlySet<string>): FieldSelector {
  const reqs = parseFieldTerms(raw ?? '');
  for (const r of reqs) if (!supported.has(r.field)) throw badRequest(`field label not supported: ${r.field}`);
  const pinned = reqs.find((r) => r.field === 'metadata.name' && r.op === '=');
  return {
    empty: reqs.length === 0,
    requirements: reqs,
    name: pinned?.value,
    matches(read) {
      for (const r of reqs) {
        const v = read(r.field) ?? '';
        if (r.op === '=' ? v !== r.value : v === r.value) return false;
      }
      return true;
    },
  };
}
