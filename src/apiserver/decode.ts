// Decoding request bodies safely: JSON and YAML with a nesting-depth limit checked before any
// recursive code sees the value, and duplicate object keys reported (Kubernetes' strict decoding
// refuses them; JSON.parse and YAML's last-one-wins would silently drop one).
import { Lexer, Parser, parse as parseYAML } from 'yaml';
import * as status from '../api/status.js';
import { type Work, finish, inSlices } from '../registry/apply/work.js';
import { JSONIndex, closingQuote, parseJSONWork } from './json-pieces.js';

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
  /** The object's keys so far: an array while it has few (most objects), a Set past SMALL_OBJECT_KEYS. */
  keys?: string[] | Set<string>;
  key?: string;
  index: number;
}

/** Keys an object's frame keeps in an array (a Set per object of a 91,000-item list cost more). */
const SMALL_OBJECT_KEYS = 16;

/** Whether `key` was seen in this object before; records it otherwise. */
function seen(frame: Frame, key: string): boolean {
  const keys = frame.keys!;
  if (Array.isArray(keys)) {
    if (keys.includes(key)) return true;
    keys.push(key);
    if (keys.length > SMALL_OBJECT_KEYS) frame.keys = new Set(keys);
    return false;
  }
  if (keys.has(key)) return true;
  keys.add(key);
  return false;
}

function pathOf(stack: Frame[], last: string): string {
  let p = '';
  for (let i = 0; i < stack.length - 1; i++) {
    const f = stack[i]!;
    p += f.object ? (p === '' ? f.key : `.${f.key}`) : `[${f.index}]`;
  }
  return p === '' ? last : `${p}.${last}`;
}

/** Characters of JSON text scanned between two yields of the scan (src/registry/apply/work.ts). */
const SCAN_CHARS_PER_YIELD = 64 * 1024;

/**
 * One pass over JSON text, before JSON.parse sees it: nesting depth (V8 parses deep nesting
 * without a stack limit but slowly and at great cost: 10 MiB of `[` took 4 s of one event loop
 * and 300 MB, so a body that is too deep is refused before it is parsed; brackets inside strings
 * do not count) and duplicate keys. Iterative, so its own stack never grows with the input; work
 * that yields every 64 Ki characters, so a 3 MiB body is scanned a slice at a time. On text that
 * is not JSON its duplicates mean nothing: JSON.parse refuses that text next. With an `index`, it
 * also records the big containers and their commas, for a JSON.parse in pieces (json-pieces.ts).
 */
export function* scanJSONWork(text: string, what: string, index?: JSONIndex): Work<string[]> {
  const duplicates: string[] = [];
  const stack: Frame[] = [];
  let expectKey = false;
  let nextYield = SCAN_CHARS_PER_YIELD;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    if (i >= nextYield) {
      yield;
      nextYield = i + SCAN_CHARS_PER_YIELD;
    }
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // indexOf skips a string's characters natively; a body of one long list is almost all strings.
      const q = closingQuote(text, i);
      const j = q < 0 ? n : q;
      const top = stack[stack.length - 1];
      if (top?.object && expectKey) {
        let escaped = false;
        for (let k = i + 1; k < j && !escaped; k++) escaped = text.charCodeAt(k) === 0x5c;
        const key = escaped ? unescapeKey(text.slice(i, j + 1)) : text.slice(i + 1, j);
        if (seen(top, key)) duplicates.push(pathOf(stack, key));
        top.key = key;
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_NESTING_DEPTH) throw tooDeep(what);
      const object = c === 0x7b;
      stack.push(object ? { object, keys: [], index: 0 } : { object, index: 0 });
      index?.open(i, object);
      expectKey = object;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      index?.close(i, c === 0x7d);
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      index?.comma(i);
      const top = stack[stack.length - 1];
      if (top?.object) expectKey = true;
      else if (top) top.index++;
    }
  }
  index?.end();
  return duplicates;
}

/** A quoted key with escapes; as written when the escapes are not JSON (JSON.parse refuses the text then). */
function unescapeKey(quoted: string): string {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted;
  }
}

/** Bodies smaller than this are decoded at once; larger ones a slice at a time (decodeJSONInSlices). */
const SLICED_DECODE_BYTES = 256 * 1024;

function parseJSON(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as JSON: ${(e as Error).message}`);
  }
}

export function decodeJSON(buf: Buffer, what: string): Decoded {
  const text = buf.toString('utf8');
  const duplicates = finish(scanJSONWork(text, what));
  return { value: parseJSON(text, what), duplicates };
}

/**
 * decodeJSON for a body that may be large (a write's): the scan runs in slices, and so does the
 * parse, a run of a big list's items at a time (json-pieces.ts): one JSON.parse of a 3 MiB list
 * held the event loop for 60-90 ms.
 */
export async function decodeJSONInSlices(buf: Buffer, what: string): Promise<Decoded> {
  if (buf.length < SLICED_DECODE_BYTES) return decodeJSON(buf, what);
  const text = buf.toString('utf8');
  const index = new JSONIndex();
  const duplicates = await inSlices(scanJSONWork(text, what, index));
  return { value: await parseInSlices(text, index, what), duplicates };
}

async function parseInSlices(text: string, index: JSONIndex, what: string): Promise<unknown> {
  try {
    return await inSlices(parseJSONWork(text, index));
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as JSON: ${(e as Error).message}`);
  }
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
    return jsonWithoutDuplicates(text, finish(scanJSONWork(text, what)));
  } catch {
    return undefined;
  }
}

function jsonWithoutDuplicates(text: string, duplicates: string[]): Decoded | undefined {
  if (duplicates.length > 0) return undefined;
  try {
    return { value: JSON.parse(text) as unknown, duplicates };
  } catch {
    return undefined;
  }
}

export function decodeYAML(buf: Buffer, what: string): Decoded {
  const text = buf.toString('utf8');
  return asJSON(text, what) ?? decodeYAMLText(text, what);
}

/** decodeYAML for a body that may be large: a JSON body (kubectl's apply configurations) as decodeJSONInSlices decodes it. */
export async function decodeYAMLInSlices(buf: Buffer, what: string): Promise<Decoded> {
  if (buf.length < SLICED_DECODE_BYTES) return decodeYAML(buf, what);
  const text = buf.toString('utf8');
  if (/^\s*[{[]/.test(text)) {
    const index = new JSONIndex();
    const duplicates = await inSlices(scanJSONWork(text, what, index)).catch(() => undefined);
    // Duplicate keys, or text that is not JSON: the YAML path reports them.
    const value = duplicates?.length === 0 ? await inSlices(parseJSONWork(text, index)).catch(() => undefined) : undefined;
    if (value !== undefined) return { value, duplicates: [] };
  }
  return decodeYAMLText(text, what);
}

function decodeYAMLText(text: string, what: string): Decoded {
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
