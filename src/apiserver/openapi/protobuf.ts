// Swagger 2.0 JSON → gnostic `openapi.v2.Document` protobuf, the form kubectl 1.27/1.28 and
// client-go's DiscoveryClient.OpenAPISchema() request. Vendor extensions, defaults and enum values
// are `Any{yaml}`: client-go YAML-decodes them (the operation GVK into a map[string]string).
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type protobuf from 'protobufjs';
import { stringify } from 'yaml';
import type { JsonSchema } from './schema.js';

type Msg = Record<string, any>;

const PROTO_FILE = fileURLToPath(new URL('./proto/openapiv2.proto', import.meta.url));

let documentType: protobuf.Type | undefined;
/** The openapi.v2.Document type, loaded from the .proto beside this file (copied to dist by copy-assets). */
export function openAPIv2DocumentType(): protobuf.Type {
  if (!documentType) {
    // protobufjs (CommonJS) is loaded the first time the protobuf form is asked for, not at start-up.
    const { Root } = createRequire(import.meta.url)('protobufjs') as typeof protobuf;
    const root = new Root();
    root.loadSync(PROTO_FILE, { keepCase: true });
    documentType = root.lookupType('openapi.v2.Document');
  }
  return documentType;
}

const any = (value: unknown): Msg => ({ yaml: stringify(value) });

// proto3 has no presence for scalars: leave unset what is false/empty, as gnostic's encoder does.
function compact(m: Msg): Msg {
  return Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined && v !== false && v !== ''));
}

function vendorExtensions(o: JsonSchema): Msg[] {
  return Object.keys(o)
    .filter((k) => k.startsWith('x-'))
    .map((k) => ({ name: k, value: any(o[k]) }));
}

const SCALARS: Record<string, string> = {
  format: 'format',
  title: 'title',
  description: 'description',
  multipleOf: 'multiple_of',
  maximum: 'maximum',
  exclusiveMaximum: 'exclusive_maximum',
  minimum: 'minimum',
  exclusiveMinimum: 'exclusive_minimum',
  maxLength: 'max_length',
  minLength: 'min_length',
  pattern: 'pattern',
  maxItems: 'max_items',
  minItems: 'min_items',
  uniqueItems: 'unique_items',
  maxProperties: 'max_properties',
  minProperties: 'min_properties',
  discriminator: 'discriminator',
  readOnly: 'read_only',
};

export function schemaToProto(s: JsonSchema): Msg {
  const out: Msg = {};
  if (s.$ref) out._ref = s.$ref;
  for (const [k, field] of Object.entries(SCALARS)) if (s[k] !== undefined) out[field] = s[k];
  if (s.default !== undefined) out.default = any(s.default);
  if (s.example !== undefined) out.example = any(s.example);
  if (Array.isArray(s.required) && s.required.length > 0) out.required = s.required;
  if (Array.isArray(s.enum)) out.enum = s.enum.map(any);
  if (s.additionalProperties !== undefined) {
    out.additional_properties = typeof s.additionalProperties === 'boolean' ? { boolean: s.additionalProperties } : { schema: schemaToProto(s.additionalProperties) };
  }
  if (s.type !== undefined) out.type = { value: Array.isArray(s.type) ? s.type : [s.type] };
  if (s.items !== undefined) out.items = { schema: (Array.isArray(s.items) ? s.items : [s.items]).map(schemaToProto) };
  if (Array.isArray(s.allOf)) out.all_of = s.allOf.map(schemaToProto);
  if (s.properties) out.properties = { additional_properties: Object.entries(s.properties).map(([name, v]) => ({ name, value: schemaToProto(v as JsonSchema) })) };
  const ext = vendorExtensions(s);
  if (ext.length > 0) out.vendor_extension = ext;
  return out;
}

function parameterToProto(p: JsonSchema): Msg {
  if (p.in === 'body') {
    return { parameter: { body_parameter: compact({ name: p.name, in: p.in, required: p.required, description: p.description, schema: schemaToProto(p.schema) }) } };
  }
  const sub = compact({ name: p.name, in: p.in, type: p.type, description: p.description, required: p.required, unique_items: p.uniqueItems });
  if (p.in === 'query') return { parameter: { non_body_parameter: { query_parameter_sub_schema: sub } } };
  if (p.in === 'path') return { parameter: { non_body_parameter: { path_parameter_sub_schema: sub } } };
  throw new Error(`OpenAPI v2 protobuf: unsupported parameter location ${p.in}`);
}

const OPERATION_KEYS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];

function operationToProto(o: JsonSchema): Msg {
  const out: Msg = compact({
    tags: o.tags ?? [],
    description: o.description,
    operation_id: o.operationId,
    produces: o.produces ?? [],
    consumes: o.consumes ?? [],
    schemes: o.schemes ?? [],
    parameters: (o.parameters ?? []).map(parameterToProto),
    responses: {
      response_code: Object.entries(o.responses ?? {}).map(([code, r]: [string, any]) => {
        const response: Msg = compact({ description: r.description });
        if (r.schema) response.schema = { schema: schemaToProto(r.schema) };
        return { name: code, value: { response } };
      }),
    },
    vendor_extension: vendorExtensions(o),
  });
  return out;
}

function securityToProto(reqs: JsonSchema[] | undefined): Msg[] {
  return (reqs ?? []).map((r) => ({ additional_properties: Object.entries(r).map(([name, v]) => ({ name, value: { value: v } })) }));
}

/** Converts the Swagger 2.0 JSON document to the plain-object form of openapi.v2.Document. */
export function documentToProto(doc: JsonSchema): Msg {
  return {
    swagger: doc.swagger,
    info: { title: doc.info?.title ?? '', version: doc.info?.version ?? '' },
    consumes: doc.consumes ?? [],
    produces: doc.produces ?? [],
    paths: {
      path: Object.entries(doc.paths ?? {}).map(([name, item]: [string, any]) => {
        const value: Msg = { parameters: (item.parameters ?? []).map(parameterToProto), vendor_extension: vendorExtensions(item) };
        for (const k of OPERATION_KEYS) if (item[k]) value[k] = operationToProto(item[k]);
        return { name, value };
      }),
    },
    definitions: {
      additional_properties: Object.entries(doc.definitions ?? {}).map(([name, s]) => ({ name, value: schemaToProto(s as JsonSchema) })),
    },
    security: securityToProto(doc.security),
    security_definitions: {
      additional_properties: Object.entries(doc.securityDefinitions ?? {}).map(([name, d]: [string, any]) => ({
        name,
        value: { api_key_security: compact({ type: d.type, name: d.name, in: d.in, description: d.description }) },
      })),
    },
    vendor_extension: vendorExtensions(doc),
  };
}

export function encodeV2Protobuf(doc: JsonSchema): Buffer {
  const type = openAPIv2DocumentType();
  const plain = documentToProto(doc);
  const err = type.verify(plain);
  if (err) throw new Error(`OpenAPI v2 protobuf: ${err}`);
  return Buffer.from(type.encode(type.fromObject(plain)).finish());
}
