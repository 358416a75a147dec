// The metav1 components every Kubernetes OpenAPI document carries (io.k8s.apimachinery.pkg.apis.meta.v1.*).
// ObjectMeta comes from the TypeBox schema that validates metadata; the others are only ever written by
// the server, so they are described here directly, trimmed to the fields this server fills in.
import { ObjectMetaSchema } from '../../api/meta.js';
import { META_PREFIX, V3_REF, type JsonSchema, toOpenAPISchema } from './schema.js';

export const OBJECT_META = `${META_PREFIX}.ObjectMeta`;
export const LIST_META = `${META_PREFIX}.ListMeta`;
export const STATUS = `${META_PREFIX}.Status`;
export const WATCH_EVENT = `${META_PREFIX}.WatchEvent`;
export const DELETE_OPTIONS = `${META_PREFIX}.DeleteOptions`;
export const PATCH = `${META_PREFIX}.Patch`;
export const MANAGED_FIELDS_ENTRY = `${META_PREFIX}.ManagedFieldsEntry`;
export const FIELDS_V1 = `${META_PREFIX}.FieldsV1`;

const str = (description: string): JsonSchema => ({ type: 'string', description });
const int64 = (description: string): JsonSchema => ({ type: 'integer', format: 'int64', description });
export const ref = (name: string): JsonSchema => ({ $ref: V3_REF + name });
/** A property that points at a component, in the form Kubernetes publishes in v3. */
export const embedded = (name: string, description: string): JsonSchema => ({ allOf: [ref(name)], default: {}, description });

const TYPE_META = {
  apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
  kind: str('Kind is a string value representing the REST resource this object represents.'),
};

export function metaComponents(): Record<string, JsonSchema> {
  return {
    [DELETE_OPTIONS]: {
      type: 'object',
      description: 'DeleteOptions may be provided when deleting an API object.',
      properties: {
        ...TYPE_META,
        dryRun: {
          type: 'array',
          description: 'When present, indicates that modifications should not be persisted. The only valid value is "All".',
          items: { type: 'string', default: '' },
          'x-kubernetes-list-type': 'atomic',
        },
        gracePeriodSeconds: int64('The duration in seconds before the object should be deleted. Accepted and ignored.'),
        orphanDependents: { type: 'boolean', description: 'Deprecated: use propagationPolicy.' },
        preconditions: {
          type: 'object',
          description: 'Must be fulfilled before a deletion is carried out.',
          properties: { resourceVersion: str('Specifies the target ResourceVersion'), uid: str('Specifies the target UID.') },
        },
        propagationPolicy: str('Whether and how garbage collection will be performed: Orphan, Background or Foreground.'),
      },
    },
    [LIST_META]: {
      type: 'object',
      description: 'ListMeta describes metadata that synthetic resources must have, including lists.',
      properties: {
        continue: str('Set when more results are available; pass it as the continue parameter to get the next page.'),
        remainingItemCount: int64('The number of subsequent items in the list which are not included in this list response.'),
        resourceVersion: str('The resource version of the list; use it to start a watch.'),
        selfLink: str('Deprecated; not set by this server.'),
      },
    },
    // Own description for the component: explain prints it after the metadata field's description.
    [OBJECT_META]: objectMeta(),
    [MANAGED_FIELDS_ENTRY]: {
      type: 'object',
      description: 'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
      properties: {
        apiVersion: str('APIVersion defines the version of this resource that this field set applies to.'),
        fieldsType: str('FieldsType is the discriminator for the different fields format and version. The only valid value is "FieldsV1".'),
        fieldsV1: { allOf: [ref(FIELDS_V1)], description: 'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.' },
        manager: str('Manager is an identifier of the workflow managing these fields.'),
        operation: str('Operation is the type of operation which lead to this ManagedFieldsEntry being created: Apply or Update.'),
        subresource: str('Subresource is the name of the subresource used to update that object, or empty for the main resource.'),
        // A CRD's OpenAPI inlines metav1.Time as a date-time string; kubectl explain then says <string>.
        time: { type: 'string', format: 'date-time', description: 'Time is the timestamp of when the ManagedFields entry was added.' },
      },
    },
    [FIELDS_V1]: { type: 'object', description: 'FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.' },
    [PATCH]: { type: 'object', description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.' },
    [STATUS]: {
      type: 'object',
      description: 'Status is a return value for calls that do not return other objects.',
      properties: {
        ...TYPE_META,
        code: { type: 'integer', format: 'int32', description: 'Suggested HTTP return code for this status, 0 if not set.' },
        details: {
          type: 'object',
          description: 'Extended data associated with the reason.',
          properties: {
            causes: {
              type: 'array',
              description: 'The Causes array includes more details associated with the StatusReason failure.',
              items: {
                type: 'object',
                properties: { field: str('The field of the resource that has caused this error.'), message: str('A human-readable description of the cause of the error.'), reason: str('A machine-readable description of the cause of the error.') },
              },
              'x-kubernetes-list-type': 'atomic',
            },
            group: str('The group attribute of the resource associated with the status StatusReason.'),
            kind: str('The kind attribute of the resource associated with the status StatusReason.'),
            name: str('The name attribute of the resource associated with the status StatusReason.'),
            retryAfterSeconds: { type: 'integer', format: 'int32', description: 'The number of seconds before the client should attempt to retry.' },
            uid: str('UID of the resource.'),
          },
        },
        message: str('A human-readable description of the status of this operation.'),
        metadata: embedded(LIST_META, 'Standard list metadata.'),
        reason: str('A machine-readable description of why this operation is in the "Failure" status.'),
        status: str('Status of the operation. One of: "Success" or "Failure".'),
      },
    },
    [WATCH_EVENT]: {
      type: 'object',
      description: 'Event represents a single event to a watched resource.',
      required: ['type', 'object'],
      properties: {
        object: { type: 'object', description: 'The object (or a Status for ERROR, or a bookmark object for BOOKMARK).' },
        type: str('ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.'),
      },
    },
  };
}

/**
 * ObjectMeta from the TypeBox schema that validates it, but for managedFields, published as
 * kube-apiserver publishes them for a CRD: a list of ManagedFieldsEntry whose fieldsV1 is the
 * FieldsV1 component and whose time is a date-time string, so `kubectl explain` names the same
 * types for our resources as for a CRD (test/cluster/parity-differential.test.ts).
 */
function objectMeta(): JsonSchema {
  const meta = toOpenAPISchema(ObjectMetaSchema);
  const { description } = meta.properties.managedFields;
  meta.properties.managedFields = { type: 'array', description, items: { default: {}, allOf: [ref(MANAGED_FIELDS_ENTRY)] } };
  return { ...meta, description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.' };
}
