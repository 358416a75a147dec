// Turns a URL into what the request is about, like k8s.io/apiserver's RequestInfoFactory.
// Paths may carry a kcp logical-cluster prefix: /clusters/<name>/apis/... ; `*` is the wildcard
// (cross-cluster list/watch only).
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { exactFieldMatch } from '../api/selectors.js';

export interface RequestInfo {
  /** Logical cluster; '*' for the kcp wildcard. DEFAULT_CLUSTER without a /clusters/ prefix. */
  cluster: string;
  /** The path without the /clusters/<name> prefix. */
  path: string;
  isResourceRequest: boolean;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; lower-case HTTP method otherwise. */
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** The name authorization sees: `name`, or for a list/watch with fieldSelector=metadata.name=<n>, <n>. */
  authorizationName: string;
  /** Path segments after /api/<version> or /apis/<group>/<version> (for 404 decisions). */
  parts: string[];
  /**
   * The deprecated `/watch/` form (`/apis/<g>/<v>/watch/[namespaces/<ns>/]<resource>[/<name>]`):
   * still served by kube-apiserver, always a watch, of one name when the path names one.
   */
  legacyWatch: boolean;
}

/** Logical cluster names as kcp resolves them: lower-case alphanumerics and dashes, no path (":") forms. */
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export class BadClusterError extends Error {}

function splitPath(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

export function parseRequestInfo(method: string, rawPath: string, query: URLSearchParams): RequestInfo {
  let cluster = DEFAULT_CLUSTER;
  let path = rawPath;
  if (path.startsWith('/clusters/')) {
    const rest = path.slice('/clusters/'.length);
    const slash = rest.indexOf('/');
    const name = decodeURIComponent(slash < 0 ? rest : rest.slice(0, slash));
    if (name !== '*' && !CLUSTER_NAME.test(name)) {
      throw new BadClusterError(`invalid logical cluster name "${name}": expected a resolved logical cluster name or "*"`);
    }
    cluster = name;
    path = slash < 0 ? '/' : rest.slice(slash);
  }
  const info: RequestInfo = {
    cluster,
    path,
    isResourceRequest: false,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    authorizationName: '',
    parts: [],
    legacyWatch: false,
  };
  const segs = splitPath(path).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  // /api/<version>/... is the core group (''); /apis/<group>/<version>/... every other group.
  let parts: string[];
  if (segs[0] === 'api' && segs.length >= 2) {
    info.apiVersion = segs[1]!;
    parts = segs.slice(2);
  } else if (segs[0] === 'apis' && segs.length >= 3) {
    info.apiGroup = segs[1]!;
    info.apiVersion = segs[2]!;
    parts = segs.slice(3);
  } else return info;
  info.parts = parts;
  if (parts.length === 0) return info; // /api/<v> or /apis/<g>/<v> discovery
  info.isResourceRequest = true;
  // RequestInfoFactory's special verb: /watch/<rest> is a watch of <rest>, whatever the method
  // (only GET is routed; others are 405 after authorization, as in kube-apiserver).
  if (parts[0] === 'watch' && parts.length >= 2) {
    info.legacyWatch = true;
    parts = parts.slice(1);
  }
  if (parts[0] === 'namespaces' && parts.length > 1) {
    info.namespace = parts[1]!;
    // /namespaces/<ns>/<resource>... unless the third part is a subresource of the namespace itself
    // (status, finalize), as k8s.io/apiserver's RequestInfoFactory decides.
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  if (parts.length > 0) info.resource = parts[0]!;
  if (parts.length > 1) info.name = parts[1]!;
  if (parts.length > 2) info.subresource = parts[2]!;
  if (parts.length > 3) info.subresource = parts.slice(2).join('/'); // never served; kept for the 404

  const m = method.toUpperCase();
  const isWatch = ['true', '1'].includes((query.get('watch') ?? '').toLowerCase());
  if (info.legacyWatch) info.verb = 'watch';
  else if (m === 'GET' || m === 'HEAD') info.verb = info.name ? 'get' : isWatch ? 'watch' : 'list';
  else if (m === 'POST') info.verb = 'create';
  else if (m === 'PUT') info.verb = 'update';
  else if (m === 'PATCH') info.verb = 'patch';
  else if (m === 'DELETE') info.verb = info.name ? 'delete' : 'deletecollection';
  // A list or watch narrowed to one name is authorized as that name (RBAC resourceNames), as
  // RequestInfoFactory does: the selector's exact metadata.name, escapes resolved, if it could be a
  // path segment.
  if (!info.name && (info.verb === 'list' || info.verb === 'watch')) {
    const n = exactFieldMatch(query.get('fieldSelector'), 'metadata.name');
    if (n && n !== '.' && n !== '..' && !/[/%]/.test(n)) info.authorizationName = n;
  }
  if (!info.authorizationName) info.authorizationName = info.name;
  return info;
}
