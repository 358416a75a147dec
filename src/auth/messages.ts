// Kubernetes' 403 texts, byte for byte (k8s.io/apiserver responsewriters.forbiddenMessage and
// apimachinery errors.NewForbidden), because kubectl users and scripts match on them.
import type { Attributes } from './types.js';

/** Go's %q for the strings we meet (JSON escaping is identical for printable text). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** The "User ... cannot ..." clause. */
export function forbiddenReasonText(attrs: Attributes): string {
  const user = goQuote(attrs.user?.username ?? '');
  if (!attrs.resourceRequest) return `User ${user} cannot ${attrs.verb} path ${goQuote(attrs.path ?? '')}`;
  const resource = attrs.subresource ? `${attrs.resource ?? ''}/${attrs.subresource}` : attrs.resource ?? '';
  const where = attrs.namespace ? `in the namespace ${goQuote(attrs.namespace)}` : 'at the cluster scope';
  return `User ${user} cannot ${attrs.verb} resource ${goQuote(resource)} in API group ${goQuote(attrs.apiGroup ?? '')} ${where}`;
}

/** `<resource>.<group>` as GroupResource.String() prints it. */
function qualifiedResource(attrs: Attributes): string {
  const r = attrs.resource ?? '';
  return attrs.apiGroup ? `${r}.${attrs.apiGroup}` : r;
}

/**
 * The full metav1.Status message of a denial, e.g.
 * `gittargets.configbutler.ai "demo" is forbidden: User "alice" cannot get resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"`;
 * an authorizer reason is appended as `: <reason>`.
 */
export function forbiddenMessage(attrs: Attributes, reason?: string): string {
  const err = reason ? `${forbiddenReasonText(attrs)}: ${reason}` : forbiddenReasonText(attrs);
  const qr = attrs.resourceRequest ? qualifiedResource(attrs) : '';
  if (!qr) return `forbidden: ${err}`;
  if (!attrs.name) return `${qr} is forbidden: ${err}`;
  return `${qr} ${goQuote(attrs.name)} is forbidden: ${err}`;
}

/** metav1.StatusDetails of a Forbidden Status: kind is the resource (plural), not the Kind. */
export function forbiddenDetails(attrs: Attributes): { name?: string; group?: string; kind?: string } {
  if (!attrs.resourceRequest) return {};
  const d: { name?: string; group?: string; kind?: string } = {};
  if (attrs.name) d.name = attrs.name;
  if (attrs.apiGroup) d.group = attrs.apiGroup;
  if (attrs.resource) d.kind = attrs.resource;
  return d;
}
