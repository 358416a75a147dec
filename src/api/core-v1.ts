// The sandbox's core group (v1): namespaces, configmaps, secrets, serviceaccounts. Schemas carry the
// fields of the real kinds (so kubectl explain, create and edit behave as against a cluster) and the
// rules kube-apiserver applies to them; behaviour such as a namespace's kube-root-ca.crt lives in the
// registry's strategies.
import { Type } from '@sinclair/typebox';
import { age, type PrinterColumn, type ResourceDefinition } from './definition.js';
import { envelopeSchema, LocalObjectReferenceSchema } from './meta.js';
import { type FieldError, forbiddenField, invalidValue, tooLong } from './field-errors.js';
import { isDNS1123Label, isDNS1123Subdomain } from './object-meta.js';

type Obj = Record<string, any>;

/** List fields every kind's metadata merges by key under a strategic merge patch. */
export const METADATA_MERGE_KEYS: Record<string, string> = { 'metadata.finalizers': '', 'metadata.ownerReferences': 'uid' };

const ObjectReferenceSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    namespace: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    resourceVersion: Type.Optional(Type.String()),
    fieldPath: Type.Optional(Type.String()),
  },
  { additionalProperties: false, description: 'A reference to an object.' },
);

export const NamespaceSchema = envelopeSchema(
  {
    spec: Type.Optional(
      Type.Object(
        { finalizers: Type.Optional(Type.Array(Type.String(), { description: 'Finalizers of the namespace. Not used by the sandbox.' })) },
        { additionalProperties: false, description: 'Spec defines the behavior of the Namespace.' },
      ),
    ),
    status: Type.Optional(
      Type.Object(
        {
          phase: Type.Optional(Type.String({ description: 'Phase of the namespace: Active (the sandbox deletes a namespace and its objects at once).' })),
          conditions: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
        },
        { additionalProperties: false, description: 'Status describes the current status of a Namespace.' },
      ),
    ),
  },
  'Namespace provides a scope for Names.',
);

export const ConfigMapSchema = envelopeSchema(
  {
    data: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Data contains the configuration data (UTF-8 strings).' })),
    binaryData: Type.Optional(
      Type.Record(Type.String(), Type.String({ format: 'byte' }), { description: 'BinaryData contains binary data, base64-encoded.' }),
    ),
    immutable: Type.Optional(Type.Boolean({ description: 'If true, data and binaryData cannot be changed (the object can only be deleted).' })),
  },
  'ConfigMap holds configuration data for pods to consume.',
);

export const SecretSchema = envelopeSchema(
  {
    data: Type.Optional(Type.Record(Type.String(), Type.String({ format: 'byte' }), { description: 'Secret data, base64-encoded values.' })),
    stringData: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: 'Write-only convenience: merged into data (base64-encoded) on write, never returned.' }),
    ),
    type: Type.Optional(Type.String({ description: 'Used to facilitate programmatic handling of secret data. Default Opaque; immutable.' })),
    immutable: Type.Optional(Type.Boolean({ description: 'If true, data cannot be changed (the object can only be deleted).' })),
  },
  'Secret holds secret data of a certain type.',
);

export const ServiceAccountSchema = envelopeSchema(
  {
    secrets: Type.Optional(Type.Array(ObjectReferenceSchema, { description: 'Secrets of the service account (legacy).' })),
    imagePullSecrets: Type.Optional(Type.Array(LocalObjectReferenceSchema, { description: 'Image pull secrets of pods using this account.' })),
    automountServiceAccountToken: Type.Optional(Type.Boolean({ description: 'Whether pods running as this service account mount a token.' })),
  },
  'ServiceAccount binds together a name, a principal that can be authenticated, and a set of secrets.',
);

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
/** kube-apiserver's limit on the data of one ConfigMap or Secret. */
export const MAX_DATA_BYTES = 1024 * 1024;

function configKeyErrors(field: string, map: unknown): FieldError[] {
  if (map === null || typeof map !== 'object') return [];
  const errs: FieldError[] = [];
  for (const k of Object.keys(map)) {
    if (k.length > 253) errs.push(invalidValue(field, k, 'must be no more than 253 characters'));
    else if (!CONFIG_KEY.test(k)) errs.push(invalidValue(field, k, CONFIG_KEY_MSG));
    else if (k === '.' || k === '..' || k.startsWith('..')) errs.push(invalidValue(field, k, "must not be '.' or '..' or start with '..'"));
  }
  return errs;
}

function dataBytes(map: unknown, decode: boolean): number {
  if (map === null || typeof map !== 'object') return 0;
  let n = 0;
  for (const [k, v] of Object.entries(map as Record<string, string>)) n += k.length + (decode ? Buffer.from(String(v), 'base64').length : Buffer.byteLength(String(v)));
  return n;
}

export function validateConfigMap(obj: Obj): FieldError[] {
  const errs = [...configKeyErrors('data', obj.data), ...configKeyErrors('binaryData', obj.binaryData)];
  for (const k of Object.keys(obj.binaryData ?? {})) {
    if (obj.data && k in obj.data) errs.push(invalidValue('binaryData', k, 'duplicate of key present in data'));
  }
  if (dataBytes(obj.data, false) + dataBytes(obj.binaryData, true) > MAX_DATA_BYTES) errs.push(tooLong('', MAX_DATA_BYTES));
  return errs;
}

const IMMUTABLE_SET = 'field is immutable when `immutable` is set';

function immutableDataErrors(obj: Obj, old: Obj, fields: string[]): FieldError[] {
  if (old.immutable !== true) return [];
  const errs: FieldError[] = [];
  if (obj.immutable !== true) errs.push(forbiddenField('immutable', IMMUTABLE_SET));
  for (const f of fields) if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {})) errs.push(forbiddenField(f, IMMUTABLE_SET));
  return errs;
}

export function validateConfigMapUpdate(obj: Obj, old: Obj): FieldError[] {
  return [...immutableDataErrors(obj, old, ['data', 'binaryData']), ...validateConfigMap(obj)];
}

/** stringData is write-only: its keys are folded into data (base64) and it is never stored. */
export function normalizeSecret(obj: Obj): void {
  if (obj.stringData && typeof obj.stringData === 'object' && !Array.isArray(obj.stringData)) {
    const data: Obj = obj.data && typeof obj.data === 'object' ? { ...obj.data } : {};
    for (const [k, v] of Object.entries(obj.stringData)) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj.data = data;
    delete obj.stringData;
  }
  if (obj.type === undefined || obj.type === '') obj.type = 'Opaque';
}

export function validateSecret(obj: Obj): FieldError[] {
  const errs = configKeyErrors('data', obj.data);
  if (dataBytes(obj.data, true) > MAX_DATA_BYTES) errs.push(tooLong('data', MAX_DATA_BYTES));
  return errs;
}

export function validateSecretUpdate(obj: Obj, old: Obj): FieldError[] {
  const errs = [...immutableDataErrors(obj, old, ['data']), ...validateSecret(obj)];
  if (obj.type !== old.type) errs.push(invalidValue('type', obj.type, 'field is immutable'));
  return errs;
}

export function validateNamespace(obj: Obj): FieldError[] {
  const name = obj.metadata?.name;
  // Object metadata already refuses names that are not DNS subdomains; namespaces must be labels.
  if (typeof name === 'string' && isDNS1123Subdomain(name) && !isDNS1123Label(name)) {
    return [invalidValue('metadata.name', name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")];
  }
  return [];
}

const dataCount: PrinterColumn = {
  name: 'Data',
  type: 'integer',
  description: 'Number of data keys',
  priority: 0,
  jsonPath: '.data',
  value: (o) => Object.keys(o?.data ?? {}).length + Object.keys(o?.binaryData ?? {}).length,
};

const core = { group: '', version: 'v1', generation: false, categories: [] as string[], protobuf: true };

export const namespaces: ResourceDefinition = {
  ...core,
  kind: 'Namespace',
  listKind: 'NamespaceList',
  plural: 'namespaces',
  singular: 'namespace',
  shortNames: ['ns'],
  namespaced: false,
  statusSubresource: true,
  schema: NamespaceSchema,
  columns: [
    { name: 'Status', type: 'string', description: 'The phase of the namespace', priority: 0, jsonPath: '.status.phase', value: (o) => o?.status?.phase ?? '' },
    age,
  ],
  selectableFields: { 'status.phase': (o) => o?.status?.phase },
  strategicMerge: { ...METADATA_MERGE_KEYS, 'status.conditions': 'type' },
  validateCreate: validateNamespace,
  validateUpdate: validateNamespace,
};

export const configMaps: ResourceDefinition = {
  ...core,
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  plural: 'configmaps',
  singular: 'configmap',
  shortNames: ['cm'],
  namespaced: true,
  statusSubresource: false,
  schema: ConfigMapSchema,
  columns: [dataCount, age],
  selectableFields: {},
  strategicMerge: METADATA_MERGE_KEYS,
  validateCreate: validateConfigMap,
  validateUpdate: validateConfigMapUpdate,
};

export const secrets: ResourceDefinition = {
  ...core,
  kind: 'Secret',
  listKind: 'SecretList',
  plural: 'secrets',
  singular: 'secret',
  shortNames: [],
  namespaced: true,
  statusSubresource: false,
  schema: SecretSchema,
  columns: [{ name: 'Type', type: 'string', description: 'The type of the secret', priority: 0, jsonPath: '.type', value: (o) => o?.type ?? '' }, { ...dataCount, jsonPath: '.data' }, age],
  selectableFields: { type: (o) => o?.type },
  strategicMerge: METADATA_MERGE_KEYS,
  normalize: normalizeSecret,
  validateCreate: validateSecret,
  validateUpdate: validateSecretUpdate,
};

export const serviceAccounts: ResourceDefinition = {
  ...core,
  kind: 'ServiceAccount',
  listKind: 'ServiceAccountList',
  plural: 'serviceaccounts',
  singular: 'serviceaccount',
  shortNames: ['sa'],
  namespaced: true,
  statusSubresource: false,
  schema: ServiceAccountSchema,
  columns: [
    { name: 'Secrets', type: 'integer', description: 'Number of secrets', priority: 0, jsonPath: '.secrets', value: (o) => (Array.isArray(o?.secrets) ? o.secrets.length : 0) },
    age,
  ],
  selectableFields: {},
  strategicMerge: { ...METADATA_MERGE_KEYS, secrets: 'name' },
  validateCreate: () => [],
  validateUpdate: () => [],
};

export const SANDBOX_CORE_RESOURCES: ResourceDefinition[] = [namespaces, configMaps, secrets, serviceAccounts];
