// JSON encoding of objects for the write script, and decoding of event-log entries.
import { randomBytes } from 'node:crypto';
import type { KubeObject } from '../../model/object.js';

// A per-process random marker: user data cannot contain it by accident or on purpose.
const MARK = `\u0001rv-${randomBytes(8).toString('hex')}\u0001`;
const MARK_JSON = JSON.stringify(MARK);

/**
 * Serialize `obj` split around the resourceVersion digits the script will insert. apiVersion and
 * kind come first and resourceVersion is the first member of metadata, so it is the first
 * `"resourceVersion":"<digits>"` in the text (write.lua relies on that).
 */
export function encodeForWrite(obj: KubeObject): [string, string] {
  const { apiVersion, kind, metadata, ...rest } = obj;
  const { resourceVersion: _drop, ...meta } = metadata;
  const json = JSON.stringify({ apiVersion, kind, metadata: { resourceVersion: MARK, ...meta }, ...rest });
  const i = json.indexOf(MARK_JSON);
  return [json.slice(0, i + 1), json.slice(i + MARK_JSON.length - 1)];
}

export interface LogEntry {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  cluster: string;
  field: string;
  /** RV of the previous entry of the same log (0 when none). */
  prevLog: number;
  json: string;
  prevJson?: string;
}

/** An XRANGE/XREAD entry: [id, [field, value, ...]]. */
export function decodeEntry([id, kv]: [string, string[]]): LogEntry {
  const m: Record<string, string> = {};
  for (let i = 0; i < kv.length; i += 2) m[kv[i]!] = kv[i + 1]!;
  return {
    rv: Number(id.slice(0, id.indexOf('-'))),
    type: m.t as LogEntry['type'],
    cluster: m.c!,
    field: m.f!,
    prevLog: Number(m.l),
    json: m.o!,
    prevJson: m.p,
  };
}
