// A list body as a sequence of pieces instead of one string: the head (apiVersion, kind, metadata,
// a Table's columns), then each element serialized only when the previous pieces have been taken,
// so a LIST of 10,000 objects never exists as one 13 MB string (docs/benchmarks.md, LIST memory). Joined, the
// pieces are byte for byte what JSON.stringify of the whole list gives (and with ?pretty, what
// JSON.stringify(list, null, 2) + "\n" gives), the array being the last key, as the buffered
// responses always had it.

export interface ListBody {
  /** Every key of the list but the array, in order (the array comes last). */
  head: Record<string, unknown>;
  /** The array's key: `items`, or a Table's `rows`. */
  key: string;
  count: number;
  /** Compact JSON of element `i` (may come from a cache). */
  compact(i: number): string;
  /** Element `i` itself, for the indented form. */
  value(i: number): unknown;
}

/**
 * Roughly how many characters go into one piece: few enough writes, and small enough that a piece's
 * string stays in V8's young generation (256 KiB pieces go to the large-object space, live until a
 * full GC, and raised the peak of four concurrent 10k LISTs by about 40 MB).
 */
export const PIECE_CHARS = 64 * 1024;

const INDENT = '\n    ';

/** The body's text in pieces of about PIECE_CHARS characters (the last may be shorter), as Buffers. */
export function* listPieces(body: ListBody, pretty: boolean, pieceChars = PIECE_CHARS): Generator<Buffer> {
  let buf = '';
  const take = function* (s: string): Generator<Buffer> {
    buf += s;
    if (buf.length >= pieceChars) {
      yield Buffer.from(buf);
      buf = '';
    }
  };
  const key = JSON.stringify(body.key);
  if (pretty) {
    const head = JSON.stringify(body.head, null, 2);
    // "{\n  ...\n}" loses its closing "\n}"; an empty head is "{}".
    yield* take(head === '{}' ? `{\n  ${key}: ` : `${head.slice(0, -2)},\n  ${key}: `);
    if (body.count === 0) yield* take('[]');
    else {
      for (let i = 0; i < body.count; i++) {
        yield* take(`${i === 0 ? '[' : ','}${INDENT}${JSON.stringify(body.value(i), null, 2).replaceAll('\n', INDENT)}`);
      }
      yield* take('\n  ]');
    }
    yield* take('\n}\n');
  } else {
    const head = JSON.stringify(body.head);
    yield* take(`${head.slice(0, -1)}${head.length > 2 ? ',' : ''}${key}:[`);
    for (let i = 0; i < body.count; i++) yield* take(i === 0 ? body.compact(i) : `,${body.compact(i)}`);
    yield* take(']}');
  }
  if (buf.length > 0) yield Buffer.from(buf);
}
