// OpenAPI v3: the per-group-version document served at /openapi/v3/apis/<group>/<version>.
import type { ResourceDefinition } from '../../api/resources.js';
import { buildComponents } from './components.js';
import { ref } from './meta.js';
import { type Operation, type Param, type PathItem, RESPONSE_CONTENT_TYPES, WATCH_CONTENT_TYPES, resourcePaths } from './operations.js';
import type { JsonSchema } from './schema.js';

// Kubernetes publishes `uniqueItems: true` on every parameter schema; kept for fidelity.
function param(p: Param): JsonSchema {
  const out: JsonSchema = { name: p.name, in: p.in, description: p.description };
  if (p.required) out.required = true;
  out.schema = { type: p.type, uniqueItems: true };
  return out;
}

function operation(o: Operation): JsonSchema {
  const out: JsonSchema = { description: o.description, operationId: o.operationId };
  if (o.params.length > 0) out.parameters = o.params.map(param);
  if (o.body) {
    const schema = ref(o.body.component);
    out.requestBody = { content: Object.fromEntries(o.body.contentTypes.map((t) => [t, { schema }])) };
    if (o.body.required) out.requestBody.required = true;
  }
  const types = o.watch ? [...RESPONSE_CONTENT_TYPES, ...WATCH_CONTENT_TYPES] : RESPONSE_CONTENT_TYPES;
  out.responses = {
    ...Object.fromEntries(
      Object.entries(o.responses).map(([code, r]) => [code, { description: r.description, content: Object.fromEntries(types.map((t) => [t, { schema: ref(r.component) }])) }]),
    ),
    '401': { description: 'Unauthorized' },
  };
  out.tags = [tag(o.gvk.group, o.gvk.version)];
  out['x-kubernetes-action'] = o.action;
  out['x-kubernetes-group-version-kind'] = { group: o.gvk.group, kind: o.gvk.kind, version: o.gvk.version };
  return out;
}

export function tag(group: string, version: string): string {
  return (group || 'core').split('.')[0] + '_' + version;
}

export function pathItemV3(item: PathItem): JsonSchema {
  const out: JsonSchema = {};
  for (const o of item.operations) out[o.method] = operation(o);
  out.parameters = item.params.map(param);
  return out;
}

export function buildV3(resources: ResourceDefinition[], info: { title: string; version: string }): JsonSchema {
  const paths: JsonSchema = {};
  for (const item of resources.flatMap(resourcePaths)) paths[item.path] = pathItemV3(item);
  return {
    openapi: '3.0.0',
    info: { title: info.title, version: info.version },
    paths,
    components: {
      schemas: buildComponents(resources),
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
    security: [{ BearerToken: [] }],
  };
}
