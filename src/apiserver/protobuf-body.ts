// Request bodies in Kubernetes' protobuf encoding, for the sandbox's core kinds. kubectl's typed
// commands (`kubectl create namespace`, `create configmap`, `create secret`, `create serviceaccount`)
// always send built-in kinds as application/vnd.kubernetes.protobuf and never fall back to JSON, so
// a sandbox that cannot read them cannot be used like a cluster. Responses stay JSON (kubectl
// accepts both).
//
// The envelope is the 4-byte magic "k8s\0" and a runtime.Unknown {typeMeta, raw}; `raw` is the
// object's message. Decoding is strict and driven by the field tables below (field numbers of
// k8s.io/api generated.proto): a field this server does not know is refused, never dropped.
import * as status from '../api/status.js';

type Scalar = 'string' | 'bytes' | 'bool' | 'int64' | 'int32';
interface Field {
  name: string;
  type: Scalar | { message: string } | { map: 'string' | 'bytes' };
  repeated?: boolean;
}
type MessageTable = Record<number, Field>;

const msg = (name: string): { message: string } => ({ message: name });

const MESSAGES: Record<string, MessageTable> = {
  Unknown: { 1: { name: 'typeMeta', type: msg('TypeMeta') }, 2: { name: 'raw', type: 'bytes' }, 3: { name: 'contentEncoding', type: 'string' }, 4: { name: 'contentType', type: 'string' } },
  TypeMeta: { 1: { name: 'apiVersion', type: 'string' }, 2: { name: 'kind', type: 'string' } },
  Time: { 1: { name: 'seconds', type: 'int64' }, 2: { name: 'nanos', type: 'int32' } },
  ObjectMeta: {
    1: { name: 'name', type: 'string' },
    2: { name: 'generateName', type: 'string' },
    3: { name: 'namespace', type: 'string' },
    4: { name: 'selfLink', type: 'string' },
    5: { name: 'uid', type: 'string' },
    6: { name: 'resourceVersion', type: 'string' },
    7: { name: 'generation', type: 'int64' },
    8: { name: 'creationTimestamp', type: msg('Time') },
    9: { name: 'deletionTimestamp', type: msg('Time') },
    10: { name: 'deletionGracePeriodSeconds', type: 'int64' },
    11: { name: 'labels', type: { map: 'string' } },
    12: { name: 'annotations', type: { map: 'string' } },
    13: { name: 'ownerReferences', type: msg('OwnerReference'), repeated: true },
    14: { name: 'finalizers', type: 'string', repeated: true },
    17: { name: 'managedFields', type: msg('ManagedFieldsEntry'), repeated: true },
  },
  OwnerReference: {
    1: { name: 'kind', type: 'string' },
    3: { name: 'name', type: 'string' },
    4: { name: 'uid', type: 'string' },
    5: { name: 'apiVersion', type: 'string' },
    6: { name: 'controller', type: 'bool' },
    7: { name: 'blockOwnerDeletion', type: 'bool' },
  },
  ManagedFieldsEntry: {
    1: { name: 'manager', type: 'string' },
    2: { name: 'operation', type: 'string' },
    3: { name: 'apiVersion', type: 'string' },
    4: { name: 'time', type: msg('Time') },
    6: { name: 'fieldsType', type: 'string' },
    7: { name: 'fieldsV1', type: msg('FieldsV1') },
    8: { name: 'subresource', type: 'string' },
  },
  FieldsV1: { 1: { name: 'Raw', type: 'bytes' } },
  Namespace: { 1: { name: 'metadata', type: msg('ObjectMeta') }, 2: { name: 'spec', type: msg('NamespaceSpec') }, 3: { name: 'status', type: msg('NamespaceStatus') } },
  NamespaceSpec: { 1: { name: 'finalizers', type: 'string', repeated: true } },
  NamespaceStatus: { 1: { name: 'phase', type: 'string' }, 2: { name: 'conditions', type: msg('NamespaceCondition'), repeated: true } },
  NamespaceCondition: {
    1: { name: 'type', type: 'string' },
    2: { name: 'status', type: 'string' },
    4: { name: 'lastTransitionTime', type: msg('Time') },
    5: { name: 'reason', type: 'string' },
    6: { name: 'message', type: 'string' },
  },
  ConfigMap: {
    1: { name: 'metadata', type: msg('ObjectMeta') },
    2: { name: 'data', type: { map: 'string' } },
    3: { name: 'binaryData', type: { map: 'bytes' } },
    4: { name: 'immutable', type: 'bool' },
  },
  Secret: {
    1: { name: 'metadata', type: msg('ObjectMeta') },
    2: { name: 'data', type: { map: 'bytes' } },
    3: { name: 'type', type: 'string' },
    4: { name: 'stringData', type: { map: 'string' } },
    5: { name: 'immutable', type: 'bool' },
  },
  ServiceAccount: {
    1: { name: 'metadata', type: msg('ObjectMeta') },
    2: { name: 'secrets', type: msg('ObjectReference'), repeated: true },
    3: { name: 'imagePullSecrets', type: msg('LocalObjectReference'), repeated: true },
    4: { name: 'automountServiceAccountToken', type: 'bool' },
  },
  ObjectReference: {
    1: { name: 'kind', type: 'string' },
    2: { name: 'namespace', type: 'string' },
    3: { name: 'name', type: 'string' },
    4: { name: 'uid', type: 'string' },
    5: { name: 'apiVersion', type: 'string' },
    6: { name: 'resourceVersion', type: 'string' },
    7: { name: 'fieldPath', type: 'string' },
  },
  LocalObjectReference: { 1: { name: 'name', type: 'string' } },
  // authorization.k8s.io/v1 and authentication.k8s.io/v1 reviews (`kubectl auth can-i`, `auth whoami`; src/apiserver/reviews.ts).
  SelfSubjectAccessReview: { 1: { name: 'metadata', type: msg('ObjectMeta') }, 2: { name: 'spec', type: msg('SelfSubjectAccessReviewSpec') }, 3: { name: 'status', type: msg('SubjectAccessReviewStatus') } },
  SelfSubjectAccessReviewSpec: { 1: { name: 'resourceAttributes', type: msg('ResourceAttributes') }, 2: { name: 'nonResourceAttributes', type: msg('NonResourceAttributes') } },
  ResourceAttributes: {
    1: { name: 'namespace', type: 'string' },
    2: { name: 'verb', type: 'string' },
    3: { name: 'group', type: 'string' },
    4: { name: 'version', type: 'string' },
    5: { name: 'resource', type: 'string' },
    6: { name: 'subresource', type: 'string' },
    7: { name: 'name', type: 'string' },
    8: { name: 'fieldSelector', type: msg('SelectorAttributes') },
    9: { name: 'labelSelector', type: msg('SelectorAttributes') },
  },
  // FieldSelectorAttributes and LabelSelectorAttributes share their field numbers.
  SelectorAttributes: { 1: { name: 'rawSelector', type: 'string' }, 2: { name: 'requirements', type: msg('SelectorRequirement'), repeated: true } },
  SelectorRequirement: { 1: { name: 'key', type: 'string' }, 2: { name: 'operator', type: 'string' }, 3: { name: 'values', type: 'string', repeated: true } },
  NonResourceAttributes: { 1: { name: 'path', type: 'string' }, 2: { name: 'verb', type: 'string' } },
  SubjectAccessReviewStatus: { 1: { name: 'allowed', type: 'bool' }, 2: { name: 'reason', type: 'string' }, 3: { name: 'evaluationError', type: 'string' }, 4: { name: 'denied', type: 'bool' } },
  SelfSubjectRulesReview: { 1: { name: 'metadata', type: msg('ObjectMeta') }, 2: { name: 'spec', type: msg('SelfSubjectRulesReviewSpec') }, 3: { name: 'status', type: msg('SubjectRulesReviewStatus') } },
  SelfSubjectRulesReviewSpec: { 1: { name: 'namespace', type: 'string' } },
  SubjectRulesReviewStatus: {
    1: { name: 'resourceRules', type: msg('ResourceRule'), repeated: true },
    2: { name: 'nonResourceRules', type: msg('NonResourceRule'), repeated: true },
    3: { name: 'incomplete', type: 'bool' },
    4: { name: 'evaluationError', type: 'string' },
  },
  ResourceRule: {
    1: { name: 'verbs', type: 'string', repeated: true },
    2: { name: 'apiGroups', type: 'string', repeated: true },
    3: { name: 'resources', type: 'string', repeated: true },
    4: { name: 'resourceNames', type: 'string', repeated: true },
  },
  NonResourceRule: { 1: { name: 'verbs', type: 'string', repeated: true }, 2: { name: 'nonResourceURLs', type: 'string', repeated: true } },
  SelfSubjectReview: { 1: { name: 'metadata', type: msg('ObjectMeta') }, 2: { name: 'status', type: msg('SelfSubjectReviewStatus') } },
  // The client sends the status empty; a userInfo.extra (a map of messages) is refused as unknown.
  SelfSubjectReviewStatus: { 1: { name: 'userInfo', type: msg('ReviewUserInfo') } },
  ReviewUserInfo: { 1: { name: 'username', type: 'string' }, 2: { name: 'uid', type: 'string' }, 3: { name: 'groups', type: 'string', repeated: true } },
};

/** Kinds whose protobuf bodies this server reads (apiVersion v1). */
export const PROTOBUF_KINDS = ['Namespace', 'ConfigMap', 'Secret', 'ServiceAccount'];
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

class Malformed extends Error {}

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.buf.length) throw new Malformed('truncated varint');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
    }
    throw new Malformed('varint too long');
  }

  bytes(): Buffer {
    const n = Number(this.varint());
    if (n < 0 || this.pos + n > this.buf.length) throw new Malformed('length beyond the end of the message');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

function decodeMessage(buf: Buffer, type: string, depth: number): Record<string, unknown> {
  if (depth > 32) throw new Malformed('messages nested too deeply');
  const table = MESSAGES[type]!;
  const out: Record<string, unknown> = {};
  const r = new Reader(buf);
  while (r.pos < buf.length) {
    const tag = r.varint();
    const no = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    const f = table[no];
    if (!f) throw new Malformed(`field ${no} of ${type} is not known to this server`);
    let value: unknown;
    if (typeof f.type === 'string') {
      if (f.type === 'string' || f.type === 'bytes') {
        if (wire !== 2) throw new Malformed(`${type}.${f.name}: wrong wire type`);
        const b = r.bytes();
        value = f.type === 'string' ? b.toString('utf8') : b.toString('base64');
      } else {
        if (wire !== 0) throw new Malformed(`${type}.${f.name}: wrong wire type`);
        const v = r.varint();
        value = f.type === 'bool' ? v !== 0n : Number(BigInt.asIntN(64, v));
      }
    } else {
      if (wire !== 2) throw new Malformed(`${type}.${f.name}: wrong wire type`);
      const b = r.bytes();
      if ('message' in f.type) value = decodeMessage(b, f.type.message, depth + 1);
      else {
        const entry = decodeMapEntry(b, f.type.map);
        const map = (out[f.name] ??= {}) as Record<string, unknown>;
        map[entry.key] = entry.value;
        continue;
      }
    }
    if (f.repeated) ((out[f.name] ??= []) as unknown[]).push(value);
    // Go writes non-pointer fields even when empty; their JSON form omits them (omitempty).
    else if (value === '' || (f.name === 'generation' && value === 0)) delete out[f.name];
    else out[f.name] = value;
  }
  return out;
}

function decodeMapEntry(buf: Buffer, valueType: 'string' | 'bytes'): { key: string; value: string } {
  const r = new Reader(buf);
  let key = '';
  let value = '';
  while (r.pos < buf.length) {
    const tag = r.varint();
    if ((tag & 7n) !== 2n) throw new Malformed('map entry: wrong wire type');
    const b = r.bytes();
    if (tag >> 3n === 1n) key = b.toString('utf8');
    else if (tag >> 3n === 2n) value = valueType === 'string' ? b.toString('utf8') : b.toString('base64');
    else throw new Malformed('map entry: unknown field');
  }
  return { key, value };
}

const GO_ZERO_TIME_SECONDS = -62135596800;

function rfc3339(t: Record<string, unknown>): string {
  return new Date(Number(t.seconds ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Rewrites protobuf-only shapes into their JSON forms: Time → RFC 3339, FieldsV1 → its JSON. */
function toJSONForm(meta: Record<string, any> | undefined): void {
  if (!meta) return;
  for (const k of ['creationTimestamp', 'deletionTimestamp']) {
    if (!meta[k]) continue;
    // An unset metav1.Time is an empty message (Go's Time.Marshal writes nothing for the zero
    // time) or, from older encoders, year 1; its JSON form is null.
    if (meta[k].seconds === undefined || Number(meta[k].seconds) <= GO_ZERO_TIME_SECONDS) delete meta[k];
    else meta[k] = rfc3339(meta[k]);
  }
  for (const m of meta.managedFields ?? []) {
    if (m.time) m.time = rfc3339(m.time);
    if (m.fieldsV1?.Raw) {
      try {
        m.fieldsV1 = JSON.parse(Buffer.from(m.fieldsV1.Raw, 'base64').toString('utf8'));
      } catch {
        throw new Malformed('managedFields: fieldsV1 is not JSON');
      }
    }
  }
}

/** The (apiVersion, kind) pairs a protobuf body may carry. */
export type ProtobufKinds = ReadonlyArray<{ apiVersion: string; kind: string }>;
const V1_KINDS: ProtobufKinds = PROTOBUF_KINDS.map((kind) => ({ apiVersion: 'v1', kind }));

/** Decodes a protobuf-encoded object of one of `accepted` (default: v1 PROTOBUF_KINDS) into its JSON form. */
export function decodeProtobufObject(buf: Buffer, accepted: ProtobufKinds = V1_KINDS): Record<string, unknown> {
  try {
    if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) throw new Malformed('missing the "k8s\\0" prefix');
    const unknown = decodeMessage(buf.subarray(4), 'Unknown', 0);
    const tm = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
    if (unknown.contentEncoding) throw new Malformed(`content encoding ${JSON.stringify(unknown.contentEncoding)} is not supported`);
    if (!accepted.some((k) => k.apiVersion === tm.apiVersion && k.kind === tm.kind)) {
      const names = accepted === V1_KINDS ? `v1 ${PROTOBUF_KINDS.join(', ')}` : accepted.map((k) => `${k.apiVersion} ${k.kind}`).join(', ');
      throw status.unsupportedMediaType(`${PROTOBUF_CONTENT_TYPE} is read for ${names} only (got ${tm.apiVersion ?? '?'} ${tm.kind ?? '?'}); send application/json`);
    }
    const obj = decodeMessage(Buffer.from((unknown.raw as string | undefined) ?? '', 'base64'), tm.kind!, 1);
    toJSONForm(obj.metadata as Record<string, any> | undefined);
    return { apiVersion: tm.apiVersion, kind: tm.kind, ...obj };
  } catch (e) {
    if (e instanceof Malformed) throw status.badRequest(`the protobuf body could not be decoded: ${e.message}`);
    throw e;
  }
}
