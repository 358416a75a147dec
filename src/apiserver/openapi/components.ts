// Components (v3) / definitions (v2) of the resources: the kind, its list, and the metav1 types.
import type { ResourceDefinition } from '../../api/resources.js';
import { LIST_META, OBJECT_META, embedded, metaComponents, ref } from './meta.js';
import { type JsonSchema, definitionName, toOpenAPISchema } from './schema.js';

function gvkList(r: ResourceDefinition, kind: string): JsonSchema[] {
  return [{ group: r.group, kind, version: r.version }];
}

function kindSchema(r: ResourceDefinition): JsonSchema {
  const s = toOpenAPISchema(r.schema);
  if (s.type !== 'object' || !s.properties) throw new Error(`${r.kind}: schema must be an object with properties`);
  // metadata is the shared ObjectMeta component (as Kubernetes publishes it), not an inline copy.
  s.properties.metadata = embedded(OBJECT_META, "Standard object's metadata.");
  s['x-kubernetes-group-version-kind'] = gvkList(r, r.kind);
  return s;
}

function listSchema(r: ResourceDefinition, kindName: string): JsonSchema {
  return {
    type: 'object',
    description: `${r.listKind} is a list of ${r.kind}.`,
    required: ['items'],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      items: { type: 'array', description: `List of ${r.plural}.`, items: ref(kindName) },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      metadata: embedded(LIST_META, 'Standard list metadata.'),
    },
    'x-kubernetes-group-version-kind': gvkList(r, r.listKind),
  };
}

/** Every schema of the document, keyed by component name, in sorted order (stable bodies and hashes). */
export function buildComponents(resources: ResourceDefinition[]): Record<string, JsonSchema> {
  const all: Record<string, JsonSchema> = metaComponents();
  for (const r of resources) {
    const kindName = definitionName(r.group, r.version, r.kind);
    all[kindName] = kindSchema(r);
    all[definitionName(r.group, r.version, r.listKind)] = listSchema(r, kindName);
  }
  return Object.fromEntries(Object.keys(all).sort().map((k) => [k, all[k]]));
}
