// Discovery documents: legacy (/api APIVersions, /apis APIGroupList, APIGroup, APIResourceList) and
// aggregated (apidiscovery.k8s.io v2 and v2beta1, for /api and /apis). All are built once from the
// served resource definitions; bodies are cached Buffers with ETags. The core group ('', served
// under /api) appears only when the sandbox serves it.
import { createHash } from 'node:crypto';
import { apiVersionOf, type ResourceDefinition } from '../api/definition.js';

/** A built-in resource's verbs, sorted as kube-apiserver lists them (the sandbox's core, apps and events). */
export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
/**
 * Our own resources' verbs in the order kube-apiserver lists a CRD's (apiextensions-apiserver's
 * discovery controller), since a cluster and kcp serve configbutler.ai as CRDs and clients see both
 * (test/cluster/parity-differential.test.ts).
 */
export const CRD_VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

/** Kubernetes' own groups: the legacy core, the unqualified ones (apps, batch) and *.k8s.io. */
function builtinGroup(group: string): boolean {
  return group === '' || !group.includes('.') || group.endsWith('.k8s.io');
}

function verbsOf(r: ResourceDefinition): readonly string[] {
  return r.verbs ?? (builtinGroup(r.group) ? VERBS : CRD_VERBS);
}

export interface Doc {
  body: Buffer;
  etag: string;
}

function doc(value: unknown): Doc {
  const body = Buffer.from(JSON.stringify(value));
  return { body, etag: `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"` };
}

export interface Aggregated {
  v2: Doc;
  v2beta1: Doc;
}

export interface DiscoveryDocs {
  /** GET /api: APIVersions (empty without the core group). */
  coreVersions: Doc;
  coreAggregated: Aggregated;
  /** GET /apis */
  groupList: Doc;
  aggregated: Aggregated;
  /** APIGroup and APIResourceList documents by path: /api/v1, /apis/<group>, /apis/<group>/<version>. */
  byPath: Map<string, Doc>;
  version: Doc;
}

interface GroupVersion {
  group: string;
  version: string;
  resources: ResourceDefinition[];
}

function groupVersions(resources: ResourceDefinition[]): GroupVersion[] {
  const out: GroupVersion[] = [];
  for (const r of resources) {
    let gv = out.find((g) => g.group === r.group && g.version === r.version);
    if (!gv) out.push((gv = { group: r.group, version: r.version, resources: [] }));
    gv.resources.push(r);
  }
  return out;
}

function legacyResources(gv: GroupVersion): unknown[] {
  return gv.resources.flatMap((r) => {
    const storageVersionHash = createHash('sha256').update(`${apiVersionOf(r)}/${r.kind}`).digest('base64').slice(0, 12);
    const main: Record<string, unknown> = { name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: verbsOf(r) };
    if (r.shortNames.length) main.shortNames = r.shortNames;
    if (r.categories.length) main.categories = r.categories;
    if (!r.verbs) main.storageVersionHash = storageVersionHash; // stored resources only (a review is never stored)
    const out: unknown[] = [main];
    if (r.statusSubresource) out.push({ name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: STATUS_VERBS });
    return out;
  });
}

function aggregatedVersion(gv: GroupVersion): unknown {
  return {
    version: gv.version,
    freshness: 'Current',
    resources: gv.resources.map((r) => {
      const out: Record<string, unknown> = {
        resource: r.plural,
        responseKind: { group: r.group, version: r.version, kind: r.kind },
        scope: r.namespaced ? 'Namespaced' : 'Cluster',
        singularResource: r.singular,
        verbs: verbsOf(r),
      };
      if (r.shortNames.length) out.shortNames = r.shortNames;
      if (r.categories.length) out.categories = r.categories;
      if (r.statusSubresource) out.subresources = [{ subresource: 'status', responseKind: { group: r.group, version: r.version, kind: r.kind }, verbs: STATUS_VERBS }];
      return out;
    }),
  };
}

function aggregatedDocs(items: unknown[]): Aggregated {
  const list = (apiVersion: string) => doc({ kind: 'APIGroupDiscoveryList', apiVersion, metadata: {}, items });
  return { v2: list('apidiscovery.k8s.io/v2'), v2beta1: list('apidiscovery.k8s.io/v2beta1') };
}

export function buildDiscovery(resources: ResourceDefinition[], serverVersion: Record<string, string>): DiscoveryDocs {
  const gvs = groupVersions(resources);
  const core = gvs.filter((g) => g.group === '');
  const named = gvs.filter((g) => g.group !== '');
  const byPath = new Map<string, Doc>();

  for (const gv of core) {
    byPath.set(`/api/${gv.version}`, doc({ kind: 'APIResourceList', groupVersion: gv.version, resources: legacyResources(gv) }));
  }
  const groupNames = [...new Set(named.map((g) => g.group))];
  const apiGroups = groupNames.map((name) => {
    const versions = named.filter((g) => g.group === name).map((g) => ({ groupVersion: `${name}/${g.version}`, version: g.version }));
    return { name, versions, preferredVersion: versions[0]! };
  });
  for (const g of apiGroups) byPath.set(`/apis/${g.name}`, doc({ kind: 'APIGroup', apiVersion: 'v1', ...g }));
  for (const gv of named) {
    byPath.set(
      `/apis/${gv.group}/${gv.version}`,
      doc({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${gv.group}/${gv.version}`, resources: legacyResources(gv) }),
    );
  }
  const coreItems = core.length ? [{ metadata: { creationTimestamp: null }, versions: core.map(aggregatedVersion) }] : [];
  const namedItems = groupNames.map((name) => ({
    metadata: { name, creationTimestamp: null },
    versions: named.filter((g) => g.group === name).map(aggregatedVersion),
  }));
  return {
    coreVersions: doc({ kind: 'APIVersions', versions: core.map((g) => g.version), serverAddressByClientCIDRs: [] }),
    coreAggregated: aggregatedDocs(coreItems),
    groupList: doc({ kind: 'APIGroupList', apiVersion: 'v1', groups: apiGroups }),
    aggregated: aggregatedDocs(namedItems),
    byPath,
    version: doc(serverVersion),
  };
}

export function aggregatedContentType(v: 'v2' | 'v2beta1'): string {
  return `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`;
}
