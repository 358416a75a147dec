// The REST surface of each resource, described once in a neutral form and rendered to OpenAPI v3
// (v3.ts) and Swagger 2.0 (v2.ts). Layout and operationIds follow what kube-apiserver publishes for a
// CRD, so tools keyed on them (kubectl explain, field-validation and patch-type detection) behave the same.
import type { ResourceDefinition } from '../../api/resources.js';
import { PATCH_MEDIA_TYPES } from '../../api/status.js';
import { DELETE_OPTIONS, PATCH, STATUS } from './meta.js';
import { definitionName } from './schema.js';

export interface Param {
  name: string;
  in: 'query' | 'path';
  type: 'string' | 'boolean' | 'integer';
  description: string;
  required?: boolean;
}

export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  operationId: string;
  description: string;
  action: 'get' | 'list' | 'post' | 'put' | 'patch' | 'delete' | 'deletecollection';
  gvk: { group: string; version: string; kind: string };
  params: Param[];
  /** Request body component and the content types it is accepted as. */
  body?: { component: string; contentTypes: string[]; required: boolean };
  /** Response code → component. */
  responses: Record<string, { description: string; component: string }>;
  /** Whether the operation also streams watch events (list operations). */
  watch: boolean;
}

export interface PathItem {
  path: string;
  params: Param[];
  operations: Operation[];
}

// Exactly the patch types the server accepts, from the list its 415 message names. Strategic merge
// patch is deliberately absent: advertising it makes client-side `kubectl apply` send one, which
// this server answers with 415 (as CRDs do).
export const PATCH_CONTENT_TYPES = PATCH_MEDIA_TYPES;
export const BODY_CONTENT_TYPES = ['application/json', 'application/yaml'];
export const RESPONSE_CONTENT_TYPES = ['application/json', 'application/yaml'];
export const WATCH_CONTENT_TYPES = ['application/json;stream=watch'];

const q = (name: string, type: Param['type'], description: string): Param => ({ name, in: 'query', type, description });
const PRETTY = q('pretty', 'string', "If 'true', then the output is pretty printed.");
const DRY_RUN = q('dryRun', 'string', 'When present, indicates that modifications should not be persisted. The only valid value is All.');
const FIELD_MANAGER = q('fieldManager', 'string', 'A name associated with the actor or entity that is making these changes. Required for apply patches.');
const FIELD_VALIDATION = q(
  'fieldValidation',
  'string',
  'How to handle unknown or duplicate fields in the request body: Ignore, Warn or Strict (the default: the request fails).',
);
const FORCE = q('force', 'boolean', 'Force is going to "force" Apply requests: conflicting fields are taken over. Only valid for apply patches.');
const LIST_PARAMS: Param[] = [
  q('allowWatchBookmarks', 'boolean', 'Requests watch events with type BOOKMARK.'),
  q('continue', 'string', 'The continue token returned by a previous paginated list call.'),
  q('fieldSelector', 'string', 'A selector to restrict the list of returned objects by their fields (metadata.name, metadata.namespace and the fields a resource declares).'),
  q('labelSelector', 'string', 'A selector to restrict the list of returned objects by their labels.'),
  q('limit', 'integer', 'Maximum number of responses to return for a list call; the response carries a continue token when more exist.'),
  q('resourceVersion', 'string', 'Constrains which resource versions the request may be served from.'),
  q('resourceVersionMatch', 'string', 'How resourceVersion is applied to list calls: Exact or NotOlderThan.'),
  q('sendInitialEvents', 'boolean', 'With watch=true and resourceVersionMatch=NotOlderThan: start the watch stream with synthetic ADDED events of the current state, then a BOOKMARK.'),
  q('timeoutSeconds', 'integer', 'Timeout for the list/watch call.'),
  q('watch', 'boolean', 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.'),
];
const WRITE_PARAMS = [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const DELETE_PARAMS: Param[] = [
  DRY_RUN,
  q('gracePeriodSeconds', 'integer', 'The duration in seconds before the object should be deleted. Accepted and ignored.'),
  q('propagationPolicy', 'string', 'Whether and how garbage collection will be performed: Orphan, Background or Foreground.'),
];

/** Built-in kinds (the sandbox's) also accept strategic merge patches, as kube-apiserver's do. */
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** `configbutler.ai` + `v1alpha1` → `ConfigbutlerAiV1alpha1` (core: `CoreV1`), the operationId infix Kubernetes uses. */
function gvInfix(group: string, version: string): string {
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  return (group || 'core').split('.').map(cap).join('') + cap(version);
}

const VERB_OF_ACTION: Record<Operation['action'], string> = { get: 'get', list: 'list', post: 'create', put: 'update', patch: 'patch', delete: 'delete', deletecollection: 'deletecollection' };

export function resourcePaths(r: ResourceDefinition): PathItem[] {
  const gvk = { group: r.group, version: r.version, kind: r.kind };
  const kindRef = definitionName(r.group, r.version, r.kind);
  const listRef = definitionName(r.group, r.version, r.listKind);
  const infix = gvInfix(r.group, r.version);
  const scoped = r.namespaced ? 'Namespaced' : '';
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  const patchTypes = r.strategicMerge ? [...PATCH_CONTENT_TYPES, STRATEGIC_MERGE_PATCH] : PATCH_CONTENT_TYPES;
  const collection = r.namespaced ? `${base}/namespaces/{namespace}/${r.plural}` : `${base}/${r.plural}`;
  const nsParam: Param[] = r.namespaced ? [{ name: 'namespace', in: 'path', type: 'string', required: true, description: 'object name and auth scope, such as for teams and projects' }] : [];
  const nameParam: Param = { name: 'name', in: 'path', type: 'string', required: true, description: `name of the ${r.kind}` };
  const op = (o: Omit<Operation, 'gvk' | 'watch'> & { watch?: boolean }): Operation => ({ gvk, watch: false, ...o });
  const ok = (component: string) => ({ '200': { description: 'OK', component } });
  const written = (component: string) => ({ '200': { description: 'OK', component }, '201': { description: 'Created', component } });
  const deleted = { '200': { description: 'OK', component: STATUS }, '202': { description: 'Accepted', component: STATUS } };
  const put = (what: string, idSuffix: string): Operation =>
    op({ method: 'put', operationId: `replace${infix}${scoped}${r.kind}${idSuffix}`, description: `replace ${what}the specified ${r.kind}`, action: 'put', params: WRITE_PARAMS, body: { component: kindRef, contentTypes: BODY_CONTENT_TYPES, required: true }, responses: written(kindRef) });
  const patch = (what: string, idSuffix: string): Operation =>
    op({ method: 'patch', operationId: `patch${infix}${scoped}${r.kind}${idSuffix}`, description: `partially update ${what}the specified ${r.kind}`, action: 'patch', params: [...WRITE_PARAMS, FORCE], body: { component: PATCH, contentTypes: patchTypes, required: true }, responses: written(kindRef) });
  const get = (what: string, idSuffix: string): Operation =>
    op({ method: 'get', operationId: `read${infix}${scoped}${r.kind}${idSuffix}`, description: `read ${what}the specified ${r.kind}`, action: 'get', params: [], responses: ok(kindRef) });

  const items: PathItem[] = [];
  if (r.namespaced) {
    items.push({
      path: `${base}/${r.plural}`,
      params: [PRETTY],
      operations: [op({ method: 'get', operationId: `list${infix}${r.kind}ForAllNamespaces`, description: `list or watch objects of kind ${r.kind}`, action: 'list', params: LIST_PARAMS, responses: ok(listRef), watch: true })],
    });
  }
  items.push({
    path: collection,
    params: [...nsParam, PRETTY],
    operations: [
      op({ method: 'get', operationId: `list${infix}${scoped}${r.kind}`, description: `list or watch objects of kind ${r.kind}`, action: 'list', params: LIST_PARAMS, responses: ok(listRef), watch: true }),
      op({ method: 'post', operationId: `create${infix}${scoped}${r.kind}`, description: `create a ${r.kind}`, action: 'post', params: WRITE_PARAMS, body: { component: kindRef, contentTypes: BODY_CONTENT_TYPES, required: true }, responses: { ...written(kindRef), '202': { description: 'Accepted', component: kindRef } } }),
      op({ method: 'delete', operationId: `delete${infix}Collection${scoped}${r.kind}`, description: `delete collection of ${r.kind}`, action: 'deletecollection', params: [...DELETE_PARAMS, ...LIST_PARAMS.filter((p) => !['watch', 'allowWatchBookmarks', 'sendInitialEvents'].includes(p.name))], body: { component: DELETE_OPTIONS, contentTypes: BODY_CONTENT_TYPES, required: false }, responses: ok(STATUS) }),
    ],
  });
  items.push({
    path: `${collection}/{name}`,
    params: [nameParam, ...nsParam, PRETTY],
    operations: [
      get('', ''),
      put('', ''),
      patch('', ''),
      op({ method: 'delete', operationId: `delete${infix}${scoped}${r.kind}`, description: `delete a ${r.kind}`, action: 'delete', params: DELETE_PARAMS, body: { component: DELETE_OPTIONS, contentTypes: BODY_CONTENT_TYPES, required: false }, responses: deleted }),
    ],
  });
  if (r.statusSubresource) {
    items.push({
      path: `${collection}/{name}/status`,
      params: [nameParam, ...nsParam, PRETTY],
      operations: [get('status of ', 'Status'), put('status of ', 'Status'), patch('status of ', 'Status')],
    });
  }
  if (!r.verbs) return items;
  // A resource serving only some verbs (a create-only review) publishes only their operations.
  const served = new Set(r.verbs);
  return items
    .map((i) => ({ ...i, operations: i.operations.filter((o) => served.has(VERB_OF_ACTION[o.action])) }))
    .filter((i) => i.operations.length > 0);
}
