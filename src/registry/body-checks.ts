// The checks every write makes of its body before anything else (kube-apiserver's create and
// update handlers make the same ones): a JSON object of the resource's apiVersion and kind whose
// namespace and name agree with the URL. Used by the generic registry (registry.ts).
import type { ResourceDefinition } from '../api/definition.js';
import * as status from '../api/status.js';
import type { KubeObject } from '../model/object.js';

/** Body checks every write shares (as kube-apiserver's create and update handlers check them). */
export function checkBody(def: ResourceDefinition, apiVersion: string, body: unknown, namespace: string, urlName?: string): KubeObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw status.badRequest(`the object provided is unrecognized (must be a JSON object of kind ${def.kind})`);
  }
  const obj = body as KubeObject;
  if (obj.apiVersion !== apiVersion) {
    throw status.badRequest(
      obj.apiVersion === undefined
        ? `Object 'apiVersion' is missing in the request body; expected "${apiVersion}"`
        : `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersion})`,
    );
  }
  if (obj.kind !== def.kind) {
    throw status.badRequest(
      obj.kind === undefined
        ? `Object 'Kind' is missing in the request body; expected "${def.kind}"`
        : `the kind in the data (${String(obj.kind)}) does not match the expected kind (${def.kind})`,
    );
  }
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  if (typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) throw status.badRequest('metadata must be an object');
  const ns = obj.metadata.namespace;
  if (def.namespaced && ns !== undefined && ns !== '' && ns !== namespace) {
    throw status.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  if (urlName !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== urlName) {
    throw status.badRequest(`the name of the object (${String(obj.metadata.name)}) does not match the name on the URL (${urlName})`);
  }
  return obj;
}

/** Whether a body pins a resourceVersion (an optimistic-lock precondition, never retried). */
export function pinsResourceVersion(config: unknown): boolean {
  const rv = (config as KubeObject | null)?.metadata?.resourceVersion;
  return rv !== undefined && rv !== null && rv !== '';
}
