// Discovery documents: legacy (APIGroupList, APIGroup, APIResourceList) and aggregated
// (apidiscovery.k8s.io v2 and v2beta1). All are built once; bodies are cached Buffers with ETags.
import { createHash } from 'node:crypto';
import type { ResourceDefinition } from '../api/resources.js';

export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

export interface Doc {
  body: Buffer;
  etag: string;
}

function doc(value: unknown): Doc {
  const body = Buffer.from(JSON.stringify(value));
  return { body, etag: `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"` };
}

export interface DiscoveryDocs {
  groupList: Doc;
  group: Doc;
  resourceList: Doc;
  aggregated: { v2: Doc; v2beta1: Doc };
  version: Doc;
}

export function buildDiscovery(group: string, version: string, resources: ResourceDefinition[], serverVersion: Record<string, string>): DiscoveryDocs {
  const gv = { groupVersion: `${group}/${version}`, version };
  const apiGroup = { name: group, versions: [gv], preferredVersion: gv };
  const legacyResources = resources.flatMap((r) => {
    const storageVersionHash = createHash('sha256').update(`${group}/${version}/${r.kind}`).digest('base64').slice(0, 12);
    return [
      {
        name: r.plural,
        singularName: r.singular,
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: VERBS,
        shortNames: r.shortNames,
        categories: r.categories,
        storageVersionHash,
      },
      { name: `${r.plural}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: STATUS_VERBS },
    ];
  });
  const aggregated = (apiVersion: string) => ({
    kind: 'APIGroupDiscoveryList',
    apiVersion,
    metadata: {},
    items: [
      {
        metadata: { name: group, creationTimestamp: null },
        versions: [
          {
            version,
            freshness: 'Current',
            resources: resources.map((r) => ({
              resource: r.plural,
              responseKind: { group, version, kind: r.kind },
              scope: r.namespaced ? 'Namespaced' : 'Cluster',
              singularResource: r.singular,
              verbs: VERBS,
              shortNames: r.shortNames,
              categories: r.categories,
              subresources: [{ subresource: 'status', responseKind: { group, version, kind: r.kind }, verbs: STATUS_VERBS }],
            })),
          },
        ],
      },
    ],
  });
  return {
    groupList: doc({ kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup] }),
    group: doc({ kind: 'APIGroup', apiVersion: 'v1', ...apiGroup }),
    resourceList: doc({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv.groupVersion, resources: legacyResources }),
    aggregated: { v2: doc(aggregated('apidiscovery.k8s.io/v2')), v2beta1: doc(aggregated('apidiscovery.k8s.io/v2beta1')) },
    version: doc(serverVersion),
  };
}

export function aggregatedContentType(v: 'v2' | 'v2beta1'): string {
  return `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`;
}
