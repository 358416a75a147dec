// Content negotiation the way Kubernetes clients expect it: walk the Accept list in order (clients
// do not use q-values) and take the first alternative we can produce. Protobuf and CBOR are never
// produced; every client that asks for them also offers JSON.
import { notAcceptable } from '../api/status.js';

export type Output = 'json' | 'yaml' | 'table' | 'partial' | 'partial-list';

export interface MediaRange {
  type: string;
  params: Record<string, string>;
}

export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header || header.trim() === '') return [{ type: '*/*', params: {} }];
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [t, ...ps] = part.split(';');
    const type = (t ?? '').trim().toLowerCase();
    if (!type) continue;
    const params: Record<string, string> = {};
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
    }
    out.push({ type, params });
  }
  return out;
}

/** What a handler can produce for a request. */
export interface Producible {
  /** Table rendering (resource get/list/watch). */
  table: boolean;
  /** PartialObjectMetadata of one object (get, watch events, writes). */
  partial: boolean;
  /** PartialObjectMetadataList (list). */
  partialList: boolean;
}

const META_GROUP = 'meta.k8s.io';

/** The meta.k8s.io version a Table or PartialObjectMetadata(List) was asked for; kube answers in it. */
export type MetaVersion = 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';

export interface Negotiated {
  output: Output;
  /** apiVersion of the Table or PartialObjectMetadata(List) (and of the rows' PartialObjectMetadata). */
  metaVersion: MetaVersion;
}

/** Throws a 406 Status when nothing acceptable can be produced. */
export function negotiateAs(accept: string | undefined, can: Producible): Negotiated {
  const plain = (output: Output): Negotiated => ({ output, metaVersion: 'meta.k8s.io/v1' });
  for (const r of parseAccept(accept)) {
    const as = r.params['as'];
    if (r.type === 'application/json' || r.type === 'application/yaml') {
      if (!as) return plain(r.type === 'application/yaml' ? 'yaml' : 'json');
      if (r.params['g'] !== META_GROUP) continue;
      const v = r.params['v'];
      if (v !== 'v1' && v !== 'v1beta1') continue;
      const metaVersion: MetaVersion = `${META_GROUP}/${v}`;
      if (as === 'Table' && can.table) return { output: 'table', metaVersion };
      if (as === 'PartialObjectMetadata' && can.partial) return { output: 'partial', metaVersion };
      if (as === 'PartialObjectMetadataList' && can.partialList) return { output: 'partial-list', metaVersion };
      continue;
    }
    if (r.type === '*/*' || r.type === 'application/*') return plain('json');
  }
  throw notAcceptable();
}

/** negotiateAs without the meta.k8s.io version. */
export function negotiate(accept: string | undefined, can: Producible): Output {
  return negotiateAs(accept, can).output;
}

/** The parameters of an aggregated-discovery Accept alternative, if the list asks for one we serve. */
export function wantsAggregatedDiscovery(accept: string | undefined): 'v2' | 'v2beta1' | 'legacy' | 'none' {
  for (const r of parseAccept(accept)) {
    if (r.type === 'application/json' && r.params['g'] === 'apidiscovery.k8s.io' && r.params['as'] === 'APIGroupDiscoveryList') {
      if (r.params['v'] === 'v2') return 'v2';
      if (r.params['v'] === 'v2beta1') return 'v2beta1';
      continue;
    }
    if (r.type === 'application/json' && !r.params['as']) return 'legacy';
    if (r.type === '*/*' || r.type === 'application/*') return 'legacy';
  }
  return 'none';
}

/** Content-Type without parameters, lower-cased. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
