// Kubernetes protobuf request bodies of the sandbox's core kinds, encoded here by hand (wire format).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeProtobufObject } from '../../src/apiserver/protobuf-body.js';
import { StatusError } from '../../src/api/status.js';

const varint = (value: number): Buffer => {
  let n = BigInt.asUintN(64, BigInt(value)); // negative int64s take ten bytes, as in Go
  const out: number[] = [];
  do {
    let b = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) b |= 0x80;
    out.push(b);
  } while (n > 0n);
  return Buffer.from(out);
};
const intField = (no: number, v: number): Buffer => Buffer.concat([varint(no << 3), varint(v)]);
const field = (no: number, bytes: Buffer | string): Buffer => {
  const b = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return Buffer.concat([varint((no << 3) | 2), varint(b.length), b]);
};
const boolField = (no: number, v: boolean): Buffer => Buffer.concat([varint(no << 3), varint(v ? 1 : 0)]);
const entry = (k: string, v: string) => Buffer.concat([field(1, k), field(2, v)]);
const envelope = (apiVersion: string, kind: string, raw: Buffer) =>
  Buffer.concat([Buffer.from('k8s\0'), field(1, Buffer.concat([field(1, apiVersion), field(2, kind)])), field(2, raw)]);

function statusOf(fn: () => unknown): { code: number; message: string | undefined } {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return { code: e.status.code, message: e.status.message };
    throw e;
  }
  throw new Error('expected a Status error');
}

test('a ConfigMap as kubectl create configmap sends it', () => {
  const meta = Buffer.concat([field(1, 'demo'), field(2, ''), field(3, 'team-a'), field(11, entry('app', 'x')), field(8, intField(1, -62135596800))]);
  const cm = Buffer.concat([field(1, meta), field(2, entry('greeting', 'hello')), field(3, entry('bin', '\x00\x01')), boolField(4, true)]);
  assert.deepEqual(decodeProtobufObject(envelope('v1', 'ConfigMap', cm)), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'demo', namespace: 'team-a', labels: { app: 'x' } },
    data: { greeting: 'hello' },
    binaryData: { bin: 'AAE=' },
    immutable: true,
  });
});

test('a Secret keeps data as base64 and stringData as text', () => {
  const s = Buffer.concat([field(1, field(1, 's')), field(2, entry('token', 's3cr3t')), field(3, 'Opaque'), field(4, entry('user', 'bob'))]);
  assert.deepEqual(decodeProtobufObject(envelope('v1', 'Secret', s)), {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's' },
    data: { token: Buffer.from('s3cr3t').toString('base64') },
    type: 'Opaque',
    stringData: { user: 'bob' },
  });
});

test('unknown fields, other kinds and damaged bodies are refused, never guessed', () => {
  const unknownField = Buffer.concat([field(1, field(1, 'x')), field(9, 'surprise')]);
  assert.deepEqual(statusOf(() => decodeProtobufObject(envelope('v1', 'ConfigMap', unknownField))), {
    code: 400,
    message: 'the protobuf body could not be decoded: field 9 of ConfigMap is not known to this server',
  });
  const deploy = statusOf(() => decodeProtobufObject(envelope('apps/v1', 'Deployment', field(1, field(1, 'd')))));
  assert.equal(deploy.code, 415);
  assert.match(deploy.message ?? '', /is read for v1 Namespace, ConfigMap, Secret, ServiceAccount only \(got apps\/v1 Deployment\); send application\/json$/);
  assert.deepEqual(statusOf(() => decodeProtobufObject(Buffer.from('{"kind":"ConfigMap"}'))), {
    code: 400,
    message: 'the protobuf body could not be decoded: missing the "k8s\\0" prefix',
  });
  const truncated = envelope('v1', 'ConfigMap', field(1, field(1, 'x'))).subarray(0, 20);
  assert.equal(statusOf(() => decodeProtobufObject(truncated)).code, 400);
});
