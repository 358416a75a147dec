// Decoding request bodies safely: JSON and YAML with a nesting-depth limit checked before any
// recursive code sees the value, and duplicate object keys reported (Kubernetes' strict decoding
// refuses them; JSON.parse and YAML's last-one-wins would silently drop one).
import { Lexer, Parser, parse as parseYAML } from 'yaml';
import * as status from '../api/status.js';

/**
 * Deepest nesting of objects and arrays a body may have. Kubernetes objects nest about 15 levels;
 * the limit keeps every recursive walk (merge patch, validation, cloning, YAML composition) far
 * from the call-stack limit, where a 10,000-deep body used to end in a 500 or an abort.
 */
export const MAX_NESTING_DEPTH = 100;

export interface Decoded {
  value: unknown;
  /** Paths of duplicated keys (`metadata.name`, `spec.resources[0].group`), in document order. */
  duplicates: string[];
}

function tooDeep(what: string): status.StatusError {
  return status.badRequest(`the ${what} could not be decoded: it nests objects or arrays deeper than ${MAX_NESTING_DEPTH} levels`);
}

interface Frame {
  object: boolean;
  keys?: Set<string>;
  key?: string;
  index: number;
}

function pathOf(stack: Frame[], last: string): string {
  let p = '';
  for (let i = 0; i < stack.length - 1; i++) {
    const f = stack[i]!;
    p += f.object ? (p === '' ? f.key : `.${f.key}`) : `[${f.index}]`;
  }
  return p === '' ? last : `${p}.${last}`;
}

/**
 * One pass over JSON text that JSON.parse accepted: nesting depth and duplicate keys. Iterative,
 * so its own stack never grows with the input.
 */
function scanJSON(text: string, what: string): string[] {
  const duplicates: string[] = [];
  const stack: Frame[] = [];
  let expectKey = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 0x5c /* \ */) {
          escaped = true;
          j += 2;
          continue;
        }
        if (d === 0x22) break;
        j++;
      }
      const top = stack[stack.length - 1];
      if (top?.object && expectKey) {
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
        if (top.keys!.has(key)) duplicates.push(pathOf(stack, key));
        else top.keys!.add(key);
        top.key = key;
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_NESTING_DEPTH) throw tooDeep(what);
      const object = c === 0x7b;
      stack.push(object ? { object, keys: new Set(), index: 0 } : { object, index: 0 });
      expectKey = object;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.object) expectKey = true;
      else if (top) top.index++;
    }
  }
  return duplicates;
}

/**
 * Nesting depth only, before JSON.parse: V8 parses deep nesting without a stack limit but slowly
 * and at great cost (10 MiB of `[` took 4 s of one event loop and 300 MB), so a body that is too
 * deep is refused before it is parsed. Brackets inside strings do not count.
 */
function checkJSONDepth(text: string, what: string): void {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_NESTING_DEPTH) throw tooDeep(what);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
}

export function decodeJSON(buf: Buffer, what: string): Decoded {
  const text = buf.toString('utf8');
  checkJSONDepth(text, what);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as JSON: ${(e as Error).message}`);
  }
  return { value, duplicates: scanJSON(text, what) };
}

/** YAML's own parser keeps an explicit stack: its length is the nesting depth at each token. */
function checkYAMLDepth(text: string, what: string): void {
  const parser = new Parser();
  for (const lexeme of new Lexer().lex(text, false)) {
    for (const _ of parser.next(lexeme)) {
      /* documents are composed later by parseYAML */
    }
    // The stack holds the document itself plus one entry per open collection.
    if (parser.stack.length > MAX_NESTING_DEPTH + 1) throw tooDeep(what);
  }
}

function duplicateKeyAt(text: string, offset: number): string {
  const m = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^:\n]*?)\s*:/.exec(text.slice(offset, offset + 300));
  const raw = m?.[1]?.trim() ?? '';
  if (raw.startsWith('"')) {
    try {
      return JSON.parse(raw) as string;
    } catch {
      return raw;
    }
  }
  if (raw.startsWith("'")) return raw.slice(1, -1).replace(/''/g, "'");
  return raw;
}

/**
 * A YAML body that is JSON (kubectl sends apply configurations as JSON), decoded by JSON.parse:
 * the YAML parser builds a node per token and held the event loop for seconds on a 3 MiB list.
 * Undefined when the text is not plain JSON, or has duplicate keys (the YAML path reports them).
 */
function asJSON(text: string, what: string): Decoded | undefined {
  if (!/^\s*[{[]/.test(text)) return undefined;
  try {
    checkJSONDepth(text, what);
    const value = JSON.parse(text) as unknown;
    return scanJSON(text, what).length === 0 ? { value, duplicates: [] } : undefined;
  } catch {
    return undefined;
  }
}

export function decodeYAML(buf: Buffer, what: string): Decoded {
  const text = buf.toString('utf8');
  const json = asJSON(text, what);
  if (json) return json;
  checkYAMLDepth(text, what);
  const duplicates: string[] = [];
  const parse = (uniqueKeys: boolean) => parseYAML(text, { maxAliasCount: 100, uniqueKeys });
  try {
    try {
      return { value: parse(true), duplicates };
    } catch (e) {
      const err = e as { code?: string; pos?: [number, number] };
      if (err.code !== 'DUPLICATE_KEY') throw e;
      duplicates.push(duplicateKeyAt(text, err.pos?.[0] ?? 0));
      return { value: parse(false), duplicates };
    }
  } catch (e) {
    if (e instanceof RangeError) throw tooDeep(what);
    throw status.badRequest(`the ${what} could not be decoded as YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}
