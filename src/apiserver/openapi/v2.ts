// Swagger 2.0: the document served at /openapi/v2 (JSON for kube-aggregator, protobuf for kubectl ≤ 1.28).
// Same operations and schemas as v3, in v2 shape: `definitions`, `consumes`/`produces`, a `body` parameter.
import type { ResourceDefinition } from '../../api/resources.js';
import { buildComponents } from './components.js';
import { type Operation, type Param, RESPONSE_CONTENT_TYPES, WATCH_CONTENT_TYPES, resourcePaths } from './operations.js';
import { type JsonSchema, V2_REF, toV2Schema } from './schema.js';
import { tag } from './v3.js';

function param(p: Param): JsonSchema {
  const out: JsonSchema = { uniqueItems: true, type: p.type, description: p.description, name: p.name, in: p.in };
  if (p.required) out.required = true;
  return out;
}

function operation(o: Operation): JsonSchema {
  const out: JsonSchema = { description: o.description, operationId: o.operationId };
  if (o.body) out.consumes = o.body.contentTypes;
  out.produces = o.watch ? [...RESPONSE_CONTENT_TYPES, ...WATCH_CONTENT_TYPES] : RESPONSE_CONTENT_TYPES;
  out.schemes = ['https'];
  out.tags = [tag(o.gvk.group, o.gvk.version)];
  // kubectl's v2 field-validation check reads these operation-level parameters only.
  const params: JsonSchema[] = [];
  if (o.body) {
    const body: JsonSchema = { name: 'body', in: 'body', schema: { $ref: V2_REF + o.body.component } };
    if (o.body.required) body.required = true;
    params.push(body);
  }
  params.push(...o.params.map(param));
  if (params.length > 0) out.parameters = params;
  out.responses = {
    ...Object.fromEntries(Object.entries(o.responses).map(([code, r]) => [code, { description: r.description, schema: { $ref: V2_REF + r.component } }])),
    '401': { description: 'Unauthorized' },
  };
  out['x-kubernetes-action'] = o.action;
  out['x-kubernetes-group-version-kind'] = { group: o.gvk.group, kind: o.gvk.kind, version: o.gvk.version };
  return out;
}

export function buildV2(resources: ResourceDefinition[], info: { title: string; version: string }): JsonSchema {
  const paths: JsonSchema = {};
  for (const item of resources.flatMap(resourcePaths)) {
    const out: JsonSchema = {};
    for (const o of item.operations) out[o.method] = operation(o);
    out.parameters = item.params.map(param);
    paths[item.path] = out;
  }
  const components = buildComponents(resources);
  return {
    swagger: '2.0',
    info: { title: info.title, version: info.version },
    paths,
    definitions: Object.fromEntries(Object.entries(components).map(([k, v]) => [k, toV2Schema(v)])),
    securityDefinitions: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
}
