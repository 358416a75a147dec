// JSON.parse of a large body in pieces, so that no single step holds the event loop for long. A
// 3 MiB body of one list (149,000 env entries) took 60-90 ms in one JSON.parse: the longest wait
// other clients had during such a write, once every walk after it yielded (work.ts). Here every
// container of the text larger than PIECE_CHARS is split at its own commas into runs of children of
// about PIECE_CHARS, each run parsed by JSON.parse (native speed, ~3 ms) between two yields, and
// the runs joined. The structure comes from the scan that already reads every body before it is
// parsed (decode.ts scanJSONWork), which records big containers and their commas as it goes.
//
// Correctness does not rest on the scan: JSON.parse checks every run, the code below checks what
// lies between runs (brackets of the right kind, commas, a key and its colon, whitespace), and each
// run must give as many values as it has children. Anything else (text that is not JSON, a
// trailing comma, duplicate keys within a run) falls back to one JSON.parse of the whole text,
// whose value or error message is then exactly JSON.parse's.
import type { Work } from '../registry/apply/work.js';

/** Characters a run of children may span before it is parsed on its own (about 3 ms of JSON.parse). */
export const PIECE_CHARS = 128 * 1024;

/** A container of the text longer than PIECE_CHARS: its closing bracket and its own commas' offsets. */
interface BigContainer {
  close: number;
  object: boolean;
  commas: number[];
}

/**
 * What decode.ts scanJSONWork records for the parse: the big containers by the offset of their
 * opening bracket, and the commas of the containers still open while the scan runs.
 */
export class JSONIndex {
  readonly big = new Map<number, BigContainer>();
  /** Set when brackets do not pair up: the text is not JSON and JSON.parse will say where. */
  broken = false;
  private readonly commas: number[] = [];
  private readonly opened: Array<{ at: number; object: boolean; commasFrom: number }> = [];

  open(at: number, object: boolean): void {
    this.opened.push({ at, object, commasFrom: this.commas.length });
  }

  comma(at: number): void {
    if (this.opened.length > 0) this.commas.push(at);
  }

  close(at: number, object: boolean): void {
    const o = this.opened.pop();
    if (!o || o.object !== object) {
      this.broken = true;
      return;
    }
    // Nested containers dropped their commas when they closed, so what is left past commasFrom is this one's own.
    if (at - o.at > PIECE_CHARS) this.big.set(o.at, { close: at, object, commas: this.commas.slice(o.commasFrom) });
    this.commas.length = o.commasFrom;
  }

  end(): void {
    if (this.opened.length > 0) this.broken = true;
  }
}

/** Why a piecewise parse gave up: the whole text is parsed at once instead. */
class NotPiecewise extends Error {}

/** JSON whitespace (RFC 8259: space, tab, line feed, carriage return). */
function skipWS(text: string, i: number): number {
  for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  return i;
}

/**
 * The offset of the quote closing the string that opens at `open`, or -1: the next quote not
 * escaped, i.e. not after an odd run of backslashes.
 */
export function closingQuote(text: string, open: number): number {
  for (let j = open + 1; ; ) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let b = q - 1;
    while (b > open && text.charCodeAt(b) === 0x5c /* \ */) b--;
    if ((q - 1 - b) % 2 === 0) return q;
    j = q + 1;
  }
}

/** JSON.parse's own-property semantics: `__proto__` is a key like any other, never the prototype. */
function define(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The value of `text`, parsed a run of children at a time when the index has big containers; the
 * same value (or the same error) as JSON.parse(text).
 */
export function* parseJSONWork(text: string, index: JSONIndex): Work<unknown> {
  if (!index.broken && index.big.size > 0) {
    try {
      const start = skipWS(text, 0);
      const top = index.big.get(start);
      if (top && skipWS(text, top.close + 1) === text.length) return yield* container(text, index, start, top);
    } catch (e) {
      if (!(e instanceof NotPiecewise) && !(e instanceof SyntaxError)) throw e;
    }
  }
  return JSON.parse(text);
}

/** A child of an object or array whose value is itself a big container, so it is parsed piecewise too. */
function bigChild(text: string, index: JSONIndex, from: number, end: number, object: boolean): { key: string; open: number; node: BigContainer } | undefined {
  if (end - from <= PIECE_CHARS) return undefined;
  let p = skipWS(text, from);
  let key = '';
  if (object) {
    if (text.charCodeAt(p) !== 0x22) return undefined;
    const q = closingQuote(text, p);
    if (q < 0) return undefined;
    const colon = skipWS(text, q + 1);
    if (text.charCodeAt(colon) !== 0x3a /* : */) return undefined;
    key = JSON.parse(text.slice(p, q + 1)) as string;
    p = skipWS(text, colon + 1);
  }
  const node = index.big.get(p);
  return node && node.close < end ? { key, open: p, node } : undefined;
}

function* container(text: string, index: JSONIndex, open: number, node: BigContainer): Work<unknown> {
  const out: Record<string, unknown> = {};
  // An array's runs, joined by one concat at the end (pushing item by item cost more than the parse).
  const parts: unknown[][] = [];
  let runStart = 0;
  let runEnd = 0;
  let runChildren = 0;
  const flush = () => {
    if (runChildren === 0) return;
    const piece = text.slice(runStart, runEnd);
    if (node.object) {
      const o = JSON.parse(`{${piece}}`) as Record<string, unknown>;
      const keys = Object.keys(o);
      if (keys.length !== runChildren) throw new NotPiecewise();
      for (const k of keys) define(out, k, o[k]);
    } else {
      const a = JSON.parse(`[${piece}]`) as unknown[];
      if (a.length !== runChildren) throw new NotPiecewise();
      parts.push(a);
    }
    runChildren = 0;
  };
  let from = open + 1;
  const ends = node.commas;
  for (let i = 0; i <= ends.length; i++) {
    const end = i < ends.length ? ends[i]! : node.close;
    const child = bigChild(text, index, from, end, node.object);
    if (child) {
      flush();
      yield;
      const v = yield* container(text, index, child.open, child.node);
      if (skipWS(text, child.node.close + 1) !== end) throw new NotPiecewise();
      if (node.object) define(out, child.key, v);
      else parts.push([v]);
    } else {
      if (runChildren === 0) runStart = from;
      runEnd = end;
      runChildren++;
      if (runEnd - runStart >= PIECE_CHARS) {
        flush();
        yield;
      }
    }
    from = end + 1;
  }
  flush();
  return node.object ? out : ([] as unknown[]).concat(...parts);
}
