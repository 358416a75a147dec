// A fast reader for the common manifest: block mappings and sequences of one-line scalars, the
// shape the writer itself emits (src/git/manifest-yaml.ts) and most hand-written manifests have.
// It answers only what the gate's file rules ask (src/analyzer/file-rules.ts): how many documents,
// which are empty, and each one's identity (apiVersion, kind, metadata.name/namespace) or that it
// is not an object. It accepts a strict subset of YAML 1.2 whose meaning it is certain of, and
// answers undefined for anything else (flow collections other than {} and [], multi-line or
// escaped quoted scalars, anchors, aliases, tags, directives, templates, tabs, CR, non-ASCII,
// keys that are not plain words, values it cannot type without the core schema); the caller then
// runs the full `yaml` parser. test/analyzer/plain-yaml.test.ts runs both over a corpus of tricky
// YAML and requires identical findings wherever this reader answers.
import type { ObjectIdentity } from './types.js';

/** One document's outcome: empty (skipped), an object's identity, or not an object. */
export type DocumentOutcome = 'empty' | 'notAnObject' | ObjectIdentity;

const SP = 0x20;
const NL = 0x0a;
const HASH = 0x23;
const COLON = 0x3a;
const DASH = 0x2d;

/** A scalar value that is certainly a string (the core schema would not read it as null, bool or number). */
type Value = { s: string } | 'other';

interface Frame {
  seq: boolean;
  indent: number;
  /** A sequence at its parent key's own indentation (`key:\n- a`): a key at that indentation ends it. */
  compact: boolean;
  /** The mapping's keys so far (a duplicate is an error for the full parser): an array while small, then also a Set. */
  keys: string[] | undefined;
  keySet?: Set<string>;
  /** 'root' (the document's mapping) or 'metadata' (its metadata mapping): where identity fields live. */
  role: 'root' | 'metadata' | undefined;
}

/** Scalar words the core schema reads as null or booleans. */
const NOT_STRING_WORD = new Set(['null', 'Null', 'NULL', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE']);

/** The full parser refuses implicit keys longer than 1024 characters; longer ones are left to it. */
const MAX_KEY = 1000;
/** Up to this many keys, a mapping's keys are checked for duplicates by scanning an array; past it, with a Set. */
const SMALL_MAPPING = 16;

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** Characters of a plain key: letters, digits, `_`, `.`, `/`, `-` (the first a letter or `_`). */
const isKeyChar = (c: number) => isLetter(c) || isDigit(c) || c === 0x5f || c === 0x2e || c === 0x2f || c === DASH;

/** Adds `key` to a mapping's keys; false when it is already there. */
function addKey(frame: Frame, key: string): boolean {
  const keys = frame.keys!;
  if (frame.keySet) {
    if (frame.keySet.has(key)) return false;
    frame.keySet.add(key);
    return true;
  }
  if (keys.includes(key)) return false;
  keys.push(key);
  if (keys.length > SMALL_MAPPING) frame.keySet = new Set(keys);
  return true;
}

class Uncertain extends Error {}
const UNCERTAIN = new Uncertain();

/** Characters outside printable ASCII and newline, or template markers: the full parser decides. */
function certainCharacters(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < SP && c !== NL) || c > 0x7e) return false;
    if (c === 0x7b && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d === 0x7b || d === 0x25) return false; // `{{` or `{%`
    }
  }
  return true;
}

/**
 * The documents of `text` when it is in the certain subset; undefined when only the full parser
 * can tell (the caller must then use it).
 */
export function readPlainManifest(text: string): DocumentOutcome[] | undefined {
  if (!certainCharacters(text)) return undefined;
  try {
    return new PlainReader(text).read();
  } catch (e) {
    if (e instanceof Uncertain) return undefined;
    throw e;
  }
}

class PlainReader {
  private readonly docs: DocumentOutcome[] = [];
  private frames: Frame[] = [];
  private inDocument = false;
  /** A key or dash whose value is on the following lines (or null): its indentation, and whether a key owns it. */
  private pending: { indent: number; byKey: boolean; key: string | undefined; frame: Frame } | undefined;
  /** Inside a block scalar: its owner's indentation and the content's (-1 until the first content line). */
  private block: { parent: number; content: number; leadingSpaces: number } | undefined;
  private apiVersion: Value | undefined;
  private kind: Value | undefined;
  private metadata: 'map' | 'other' | undefined;
  private name: Value | undefined;
  private namespace: Value | undefined;

  constructor(private readonly text: string) {}

  read(): DocumentOutcome[] {
    const t = this.text;
    let start = 0;
    while (start < t.length) {
      let end = t.indexOf('\n', start);
      if (end < 0) end = t.length;
      this.line(start, end);
      start = end + 1;
    }
    if (this.inDocument) this.endDocument();
    return this.docs;
  }

  private line(start: number, end: number): void {
    const t = this.text;
    let i = start;
    while (i < end && t.charCodeAt(i) === SP) i++;
    const indent = i - start;
    const blank = i === end;
    if (this.block) {
      const b = this.block;
      if (blank) {
        if (b.content < 0) b.leadingSpaces = Math.max(b.leadingSpaces, indent);
        return;
      }
      if (b.content < 0 && indent > b.parent) {
        if (b.leadingSpaces > indent) throw UNCERTAIN; // more-indented leading empty lines need an indentation indicator
        b.content = indent;
        return;
      }
      if (b.content >= 0 && indent >= b.content) return;
      if (indent > b.parent) throw UNCERTAIN;
      this.block = undefined; // a line at or left of the owner's indentation ends the scalar
    }
    if (blank || t.charCodeAt(i) === HASH) return;
    if (indent === 0 && end - start === 3 && t.startsWith('---', start)) {
      if (this.inDocument) this.endDocument();
      this.beginDocument();
      return;
    }
    if (!this.inDocument) this.beginDocument();
    const c = t.charCodeAt(i);
    if (c === DASH && (i + 1 === end || t.charCodeAt(i + 1) === SP)) this.sequenceEntry(indent, i, end);
    else this.mappingEntry(indent, i, end, false);
  }

  private beginDocument(): void {
    this.inDocument = true;
    this.frames = [];
    this.pending = undefined;
    this.block = undefined;
    this.apiVersion = this.kind = this.name = this.namespace = undefined;
    this.metadata = undefined;
  }

  private endDocument(): void {
    this.inDocument = false;
    if (this.pending) this.assign(this.pending.frame, this.pending.key, 'other');
    this.pending = undefined;
    this.block = undefined;
    if (this.frames.length === 0) {
      this.docs.push('empty');
      return;
    }
    const str = (v: Value | undefined) => (v !== undefined && v !== 'other' && v.s !== '' ? v.s : undefined);
    const apiVersion = str(this.apiVersion);
    const kind = str(this.kind);
    const name = this.metadata === 'map' ? str(this.name) : undefined;
    if (apiVersion === undefined || kind === undefined || name === undefined) {
      this.docs.push('notAnObject');
      return;
    }
    const namespace = str(this.namespace);
    this.docs.push(namespace ? { apiVersion, kind, namespace, name } : { apiVersion, kind, name });
  }

  /** Finds (or opens) the frame a line of `indent` belongs to. */
  private frameFor(indent: number, seq: boolean): Frame {
    const p = this.pending;
    if (p) {
      this.pending = undefined;
      const nested = indent > p.indent;
      const compact = !nested && indent === p.indent && p.byKey && seq;
      if (nested || compact) {
        const role = !seq && p.frame.role === 'root' && p.key === 'metadata' ? 'metadata' : undefined;
        if (p.key !== undefined) this.assign(p.frame, p.key, seq ? 'other' : 'map');
        const f: Frame = { seq, indent, compact, keys: seq ? undefined : [], role };
        this.frames.push(f);
        return f;
      }
      this.assign(p.frame, p.key, 'other'); // a null value
    }
    if (this.frames.length === 0) {
      if (seq || indent !== 0) throw UNCERTAIN; // only a document that is one mapping at the margin
      const root: Frame = { seq: false, indent: 0, compact: false, keys: [], role: 'root' };
      this.frames.push(root);
      return root;
    }
    let top = this.frames[this.frames.length - 1];
    while (top.indent > indent || (top.indent === indent && top.compact && !seq)) {
      this.frames.pop();
      if (this.frames.length === 0) throw UNCERTAIN;
      top = this.frames[this.frames.length - 1];
    }
    if (top.indent !== indent || top.seq !== seq) throw UNCERTAIN;
    return top;
  }

  private sequenceEntry(indent: number, dash: number, end: number): void {
    const frame = this.frameFor(indent, true);
    const t = this.text;
    let i = dash + 1;
    while (i < end && t.charCodeAt(i) === SP) i++;
    if (i === end || t.charCodeAt(i) === HASH) {
      if (i < end && t.charCodeAt(i - 1) !== SP) throw UNCERTAIN;
      this.pending = { indent, byKey: false, key: undefined, frame };
      return;
    }
    if (this.keyEnd(i, end) >= 0) {
      // `- key: value`: a mapping whose keys stand at this column.
      const f: Frame = { seq: false, indent: i - (dash - indent), compact: false, keys: [], role: undefined };
      this.frames.push(f);
      this.mappingEntry(f.indent, i, end, true);
      return;
    }
    this.value(i, end, indent, undefined, frame);
  }

  /** Where a plain key starting at `i` ends (its colon), or -1 when `i` does not start `key:`. */
  private keyEnd(i: number, end: number): number {
    const t = this.text;
    const c = t.charCodeAt(i);
    if (!(isLetter(c) || c === 0x5f)) return -1;
    let j = i + 1;
    while (j < end && isKeyChar(t.charCodeAt(j))) j++;
    if (j >= end || t.charCodeAt(j) !== COLON) return -1;
    if (j + 1 < end && t.charCodeAt(j + 1) !== SP) return -1;
    return j;
  }

  private mappingEntry(indent: number, i: number, end: number, opened: boolean): void {
    const frame = opened ? this.frames[this.frames.length - 1] : this.frameFor(indent, false);
    const colon = this.keyEnd(i, end);
    if (colon < 0) throw UNCERTAIN;
    if (colon - i > MAX_KEY) throw UNCERTAIN;
    const key = this.text.slice(i, colon);
    if (NOT_STRING_WORD.has(key) || !addKey(frame, key)) throw UNCERTAIN; // a duplicate key is an error for the full parser
    let v = colon + 1;
    while (v < end && this.text.charCodeAt(v) === SP) v++;
    if (v === end || this.text.charCodeAt(v) === HASH) {
      if (v < end && v === colon + 1) throw UNCERTAIN;
      this.pending = { indent, byKey: true, key, frame };
      return;
    }
    this.value(v, end, indent, key, frame);
  }

  /** Records a key's value where the identity lives (the root mapping and its metadata mapping). */
  private assign(frame: Frame, key: string | undefined, v: Value | 'map'): void {
    if (key === undefined || frame.role === undefined) return;
    if (frame.role === 'root') {
      if (key === 'apiVersion') this.apiVersion = v === 'map' ? 'other' : v;
      else if (key === 'kind') this.kind = v === 'map' ? 'other' : v;
      else if (key === 'metadata') this.metadata = v === 'map' ? 'map' : 'other';
    } else if (key === 'name') this.name = v === 'map' ? 'other' : v;
    else if (key === 'namespace') this.namespace = v === 'map' ? 'other' : v;
  }

  private identityField(frame: Frame, key: string | undefined): boolean {
    if (key === undefined || frame.role === undefined) return false;
    return frame.role === 'root' ? key === 'apiVersion' || key === 'kind' || key === 'metadata' : key === 'name' || key === 'namespace';
  }

  /** A value on the line of its key or dash, from `i` (not a space) to `end`. */
  private value(i: number, end: number, owner: number, key: string | undefined, frame: Frame): void {
    const t = this.text;
    const c = t.charCodeAt(i);
    const identity = this.identityField(frame, key);
    if (c === 0x27 || c === 0x22) {
      const q = this.quoted(i, end, c, identity);
      if (identity) this.assign(frame, key, { s: q });
      return;
    }
    if (c === 0x7c || c === 0x3e) {
      // `|` or `>`, optionally chomped (`-`, `+`); an indentation digit is left to the full parser.
      let j = i + 1;
      if (j < end && (t.charCodeAt(j) === DASH || t.charCodeAt(j) === 0x2b)) j++;
      this.rest(j, end);
      if (identity) throw UNCERTAIN;
      this.block = { parent: owner, content: -1, leadingSpaces: 0 };
      return;
    }
    if (c === 0x7b || c === 0x5b) {
      // Only the empty flow collections `{}` and `[]`.
      if (i + 1 >= end || t.charCodeAt(i + 1) !== c + 2) throw UNCERTAIN;
      this.rest(i + 2, end);
      this.assign(frame, key, 'other');
      return;
    }
    const next = i + 1 < end ? t.charCodeAt(i + 1) : SP;
    const plainStart = isLetter(c) || isDigit(c) || c === 0x5f || c === 0x2e || c === 0x2f || c === 0x7e || c === 0x2b || c === 0x28 || c === 0x24 || c === 0x3d || c === 0x3c || (c === DASH && (isLetter(next) || isDigit(next) || next === 0x2e));
    if (!plainStart) throw UNCERTAIN; // indicators: anchors, aliases, tags, directives, reserved, `- -`, `? `, `: `
    let j = i;
    let last = i; // one past the last non-space character
    while (j < end) {
      const d = t.charCodeAt(j);
      if (d === HASH && t.charCodeAt(j - 1) === SP) break; // a comment
      if (d === COLON && (j + 1 === end || t.charCodeAt(j + 1) === SP)) throw UNCERTAIN; // `a: b: c` is a nested mapping (an error)
      if (d !== SP) last = j + 1;
      j++;
    }
    if (!identity) return; // only identity fields need their value (and its type)
    const s = t.slice(i, last);
    if (!(isLetter(c) || c === 0x5f || c === 0x2f)) throw UNCERTAIN; // numbers, `.inf`, `~`... need the core schema
    if (NOT_STRING_WORD.has(s)) throw UNCERTAIN;
    this.assign(frame, key, { s });
  }

  /** A quoted scalar that closes on its line (no escapes in double quotes); its value when `wanted`. */
  private quoted(i: number, end: number, q: number, wanted: boolean): string {
    const t = this.text;
    let j = i + 1;
    let s = '';
    let from = j;
    for (;;) {
      if (j >= end) throw UNCERTAIN; // continues on the next line
      const d = t.charCodeAt(j);
      if (q === 0x22 && d === 0x5c) throw UNCERTAIN; // an escape
      if (d === q) {
        if (q === 0x27 && j + 1 < end && t.charCodeAt(j + 1) === 0x27) {
          if (wanted) s += t.slice(from, j + 1);
          j += 2;
          from = j;
          continue;
        }
        if (wanted) s += t.slice(from, j);
        break;
      }
      j++;
    }
    this.rest(j + 1, end);
    return s;
  }

  /** After a complete value: only spaces, then the end of the line or a comment after a space. */
  private rest(i: number, end: number): void {
    const t = this.text;
    let j = i;
    while (j < end && t.charCodeAt(j) === SP) j++;
    if (j === end) return;
    if (t.charCodeAt(j) === HASH && j > i) return;
    throw UNCERTAIN;
  }
}
