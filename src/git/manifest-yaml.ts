// One YAML encoder for every file the engine writes (docs/git-engine.md): new files and in-place
// edits both go through the `yaml` Document API with the same options, so a create followed by an
// update diffs only the lines that changed. Edits merge into the parsed document, which keeps the
// comments, key order and the other documents of a multi-document file.
import { Document, isMap, isScalar, isSeq, parseAllDocuments, type Node, type Pair } from 'yaml';
import type { KubeObject } from '../model/object.js';
import { quoteAmbiguousScalars } from '../model/yaml-scalars.js';
import { writeDirect } from './yaml-direct.js';

export const YAML_OPTIONS = { indent: 2, indentSeq: true, lineWidth: 0, minContentWidth: 0 } as const;

/** Identity of a document: group (not version, so a version change finds the same file), kind, namespace, name. */
export interface ObjectIdentity {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export function identityKey(id: ObjectIdentity): string {
  return `${groupOf(id.apiVersion)}|${id.kind}|${id.namespace ?? ''}|${id.name}`;
}

export function identityOf(obj: KubeObject): ObjectIdentity {
  return { apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata?.namespace || undefined, name: obj.metadata?.name ?? '' };
}

function identityOfJS(v: unknown): ObjectIdentity | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  const meta = o.metadata as Record<string, unknown> | undefined;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || !meta || typeof meta.name !== 'string') return undefined;
  const ns = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : undefined;
  return { apiVersion: o.apiVersion, kind: o.kind, namespace: ns, name: meta.name };
}

const METADATA_ORDER = ['name', 'namespace', 'labels', 'annotations'];

/** apiVersion, kind, metadata (name, namespace, labels, annotations, rest), then the other keys sorted. */
export function orderForWriting(obj: KubeObject): Record<string, unknown> {
  const out: Record<string, unknown> = { apiVersion: obj.apiVersion, kind: obj.kind };
  const meta = obj.metadata ?? {};
  const m: Record<string, unknown> = {};
  for (const k of METADATA_ORDER) if (meta[k] !== undefined) m[k] = meta[k];
  for (const k of Object.keys(meta)) if (!METADATA_ORDER.includes(k) && meta[k] !== undefined) m[k] = meta[k];
  out.metadata = m;
  for (const k of Object.keys(obj).sort()) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata' || k === 'status' || obj[k] === undefined) continue;
    out[k] = obj[k];
  }
  return out;
}

export function encodeObject(obj: KubeObject): string {
  const ordered = orderForWriting(obj);
  // The common shapes are written directly (same bytes, a tenth of the time); the rest as a Document.
  return writeDirect(ordered) ?? encodeDocument(ordered);
}

/** The reference encoding: the yaml Document with the shared options. */
export function encodeDocument(ordered: Record<string, unknown>): string {
  const doc = new Document(ordered);
  quoteAmbiguousScalars(doc); // kubectl, Flux and Argo read these files with YAML 1.1 rules
  return doc.toString(YAML_OPTIONS);
}

/** Identities of the documents of a file; a file that does not parse holds none (it is never edited). */
export function identitiesInText(text: string): ObjectIdentity[] {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return [];
  const out: ObjectIdentity[] = [];
  for (const d of docs) {
    if (d.errors.length) return [];
    const id = identityOfJS(d.toJS());
    if (id) out.push(id);
  }
  return out;
}

function keyOf(n: unknown): unknown {
  return isScalar(n) ? n.value : n;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Merges `value` into `node`, touching only what differs; returns the node to keep in place. */
function merge(doc: Document, node: unknown, value: unknown): unknown {
  if (isMap(node) && isPlainObject(value)) {
    for (const pair of [...node.items]) if (!(String(keyOf(pair.key)) in value)) node.delete(pair.key);
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const pair = node.items.find((p) => String(keyOf(p.key)) === k) as Pair | undefined;
      if (pair) pair.value = merge(doc, pair.value, v);
      else node.items.push(doc.createPair(k, v) as Pair<unknown, unknown>);
    }
    return node;
  }
  if (isSeq(node) && Array.isArray(value)) {
    value.forEach((v, i) => {
      node.items[i] = i < node.items.length ? merge(doc, node.items[i], v) : doc.createNode(v);
    });
    node.items.length = value.length;
    return node;
  }
  if (isScalar(node) && (value === null || typeof value !== 'object') && node.value === value) return node;
  const fresh = doc.createNode(value) as Node;
  const old = node as Node | undefined;
  if (old && typeof old === 'object') {
    fresh.commentBefore = old.commentBefore;
    fresh.comment = old.comment;
    fresh.spaceBefore = old.spaceBefore;
  }
  return fresh;
}

export interface FileEdit {
  writes: KubeObject[];
  deletes: ObjectIdentity[];
}

/**
 * Applies writes and deletes to one file's text. Returns the new text, or null when the file's
 * last document was deleted. A write whose identity is not in the file is appended as a new
 * document. A file that does not parse is never rewritten, only appended to.
 */
export function editFileText(text: string | undefined, edit: FileEdit): string | null {
  if (text === undefined || text.trim() === '') {
    const docs = edit.writes.map(encodeObject);
    return docs.length ? docs.join('---\n') : null;
  }
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs) || docs.some((d) => d.errors.length)) {
    const appended = edit.writes.map(encodeObject);
    if (!appended.length) return text;
    return (text.endsWith('\n') ? text : text + '\n') + appended.map((d) => '---\n' + d).join('');
  }
  const keys = docs.map((d) => {
    const id = identityOfJS(d.toJS());
    return id ? identityKey(id) : undefined;
  });
  const deleteKeys = new Set(edit.deletes.map(identityKey));
  const kept: Array<{ doc: Document | null; text?: string }> = [];
  docs.forEach((d, i) => {
    if (keys[i] !== undefined && deleteKeys.has(keys[i]!)) return;
    kept.push({ doc: d as unknown as Document });
  });
  for (const obj of edit.writes) {
    const key = identityKey(identityOf(obj));
    const at = kept.findIndex((k) => k.doc && keys[docs.indexOf(k.doc as never)] === key);
    if (at >= 0) {
      const doc = kept[at].doc!;
      doc.contents = merge(doc, doc.contents, orderForWriting(obj)) as Document['contents'];
      quoteAmbiguousScalars(doc);
    } else kept.push({ doc: null, text: encodeObject(obj) });
  }
  const live = kept.filter((k) => k.text !== undefined || (k.doc && k.doc.contents !== null));
  if (live.length === 0) return null;
  let out = '';
  kept.forEach((k, i) => {
    let s = k.text ?? k.doc!.toString(YAML_OPTIONS);
    if (i > 0 && !s.startsWith('---')) s = '---\n' + s;
    if (i === 0 && s.startsWith('---\n') && k.doc && !k.doc.directives?.docStart) s = s.slice(4);
    out += s;
  });
  return out;
}
