// Schemas of the shared metav1 types (ObjectMeta, Condition) in TypeBox: one definition gives the
// TypeScript type, the ajv validator and the OpenAPI component.
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';

export const ObjectMetaSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Name must be unique within a namespace. A DNS-1123 subdomain.' })),
    generateName: Type.Optional(
      Type.String({ description: 'Optional prefix the server uses to generate a unique name when name is not provided.' }),
    ),
    namespace: Type.Optional(Type.String({ description: 'Namespace defines the space within which each name must be unique.' })),
    uid: Type.Optional(Type.String({ description: 'UID is the unique in time and space value for this object. Set by the server.' })),
    resourceVersion: Type.Optional(
      Type.String({ description: 'An opaque value that represents the internal version of this object; used for optimistic concurrency.' }),
    ),
    generation: Type.Optional(Type.Integer({ format: 'int64', description: 'A sequence number representing a specific generation of the desired state.' })),
    creationTimestamp: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'The time this object was created. Set by the server.',
      }),
    ),
    deletionTimestamp: Type.Optional(Type.String({ format: 'date-time', description: 'When this object will be deleted. Set by the server.' })),
    deletionGracePeriodSeconds: Type.Optional(Type.Integer({ format: 'int64' })),
    labels: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Map of string keys and values for organizing and selecting objects.' })),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Unstructured key value map for arbitrary metadata.' })),
    finalizers: Type.Optional(
      Type.Array(Type.String(), { description: 'Must be empty before the object is deleted from the registry.', 'x-kubernetes-list-type': 'set' }),
    ),
    ownerReferences: Type.Optional(
      Type.Array(
        Type.Object(
          {
            apiVersion: Type.String(),
            kind: Type.String(),
            name: Type.String(),
            uid: Type.String(),
            controller: Type.Optional(Type.Boolean()),
            blockOwnerDeletion: Type.Optional(Type.Boolean()),
          },
          // One value as a whole, as metav1.OwnerReference (+structType=atomic): apply owns the item, not its fields.
          { additionalProperties: false, 'x-kubernetes-map-type': 'atomic' },
        ),
        { description: 'Objects depended on by this object.', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['uid'] },
      ),
    ),
    managedFields: Type.Optional(
      Type.Array(
        Type.Object(
          {
            manager: Type.Optional(Type.String()),
            operation: Type.Optional(Type.String()),
            apiVersion: Type.Optional(Type.String()),
            time: Type.Optional(Type.String()),
            fieldsType: Type.Optional(Type.String()),
            fieldsV1: Type.Optional(Type.Object({}, { additionalProperties: true })),
            subresource: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        { description: 'Which manager set which fields. Maintained by the server.' },
      ),
    ),
    selfLink: Type.Optional(Type.String({ description: 'Deprecated; not set by this server.' })),
  },
  { additionalProperties: false, description: 'Standard object metadata.' },
);
export type ObjectMeta = Static<typeof ObjectMetaSchema>;

export const ConditionSchema = Type.Object(
  {
    type: Type.String({ description: 'Type of condition in CamelCase.', maxLength: 316 }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')], {
      description: 'Status of the condition: True, False or Unknown.',
    }),
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0, description: 'The generation the condition was set for.' })),
    lastTransitionTime: Type.Optional(Type.String({ format: 'date-time', description: 'Last time the condition changed status.' })),
    reason: Type.Optional(Type.String({ maxLength: 1024, description: 'Programmatic identifier of the last transition, in CamelCase.' })),
    message: Type.Optional(Type.String({ maxLength: 32768, description: 'Human-readable details of the last transition.' })),
  },
  { additionalProperties: false },
);

export const ConditionsSchema = Type.Array(ConditionSchema, {
  description: 'Conditions of the object (kstatus: Ready, Reconciling, Stalled, and resource-specific types).',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

export const LocalObjectReferenceSchema = Type.Object(
  { name: Type.String({ minLength: 1, description: 'Name of the referent in the same namespace.' }) },
  { additionalProperties: false },
);

/** The envelope every kind shares: apiVersion, kind, metadata, then the kind's own top-level fields. */
export function envelopeSchema<P extends TProperties>(fields: P, description: string) {
  return Type.Object(
    {
      apiVersion: Type.Optional(Type.String({ description: 'APIVersion defines the versioned schema of this representation of an object.' })),
      kind: Type.Optional(Type.String({ description: 'Kind is a string value representing the REST resource this object represents.' })),
      metadata: Type.Optional(ObjectMetaSchema),
      ...fields,
    },
    { additionalProperties: false, description },
  );
}

/** The envelope of a kind with a spec and a status. */
export function kindSchema<S extends TSchema, T extends TSchema>(spec: S, status: T, description: string) {
  return envelopeSchema({ spec, status: Type.Optional(status) }, description);
}
