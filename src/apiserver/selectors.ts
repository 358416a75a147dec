// Label and field selectors with Kubernetes syntax. A parse error is a 400 BadRequest.
import { badRequest } from '../api/status.js';

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

const KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(k: string, raw: string): string {
  if (!KEY.test(k) || k.length > 317) throw badRequest(`unable to parse requirement: invalid label key "${k}" in selector "${raw}"`);
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
        reqs.push({ key: checkKey(m[1]!, s), op: m[2] as 'in' | 'notin', values });
      } else if ((m = /^!\s*([^=!\s]+)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!, s), op: '!exists', values: [] });
      } else if ((m = /^([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!, s), op: m[2] === '!=' ? '!=' : '=', values: [checkValue(m[3]!, s)] });
      } else if ((m = /^([^=!\s(),]+)$/.exec(term))) {
        reqs.push({ key: checkKey(m[1]!, s), op: 'exists', values: [] });
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

export function parseFieldSelector(raw: string | null | undefined, supported: ReadonlySet<string>): FieldSelector {
  const reqs: FieldSelector['requirements'] = [];
  const s = (raw ?? '').trim();
  if (s !== '') {
    for (const termRaw of s.split(',')) {
      const term = termRaw.trim();
      const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
      if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
      const field = m[1]!.trim();
      if (!supported.has(field)) throw badRequest(`field label not supported: ${field}`);
      reqs.push({ field, op: m[2] === '!=' ? '!=' : '=', value: m[3]!.trim() });
    }
  }
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
