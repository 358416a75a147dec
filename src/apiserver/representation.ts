// How objects go on the wire: plain, as a meta.k8s.io Table, or as PartialObjectMetadata.
import type { ResourceDefinition } from '../api/resources.js';
import type { KubeObject } from '../model/object.js';
import { badRequest } from '../api/status.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function parseIncludeObject(v: string | null): IncludeObject {
  if (v === null || v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  throw badRequest(`includeObject: unsupported value "${v}": supported values: "None", "Metadata", "Object"`);
}

/** apiVersion of a Table or PartialObjectMetadata: the version the client asked for (v1 or v1beta1, same shape). */
export type MetaAPIVersion = 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';

export function partialObjectMetadata(obj: KubeObject, apiVersion: MetaAPIVersion = 'meta.k8s.io/v1'): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion, metadata: obj.metadata };
}

/** Human age like kubectl's: 45s, 5m, 3h, 2d, 3y. */
export function humanAge(ts: string | null | undefined, now = Date.now()): string {
  if (!ts) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

export function tableColumns(def: ResourceDefinition): Array<Record<string, unknown>> {
  return [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description: 'Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    ...def.columns.map((c) => ({ name: c.name, type: c.type === 'date' ? 'string' : c.type, format: c.format ?? '', description: c.description, priority: c.priority })),
  ];
}

export function tableRow(def: ResourceDefinition, obj: KubeObject, include: IncludeObject, now: number, apiVersion: MetaAPIVersion = 'meta.k8s.io/v1'): Record<string, unknown> {
  const cells: unknown[] = [obj.metadata.name ?? ''];
  for (const c of def.columns) {
    const v = c.value(obj);
    cells.push(c.type === 'date' ? humanAge(v as string | null, now) : v ?? (c.type === 'string' ? '' : null));
  }
  const row: Record<string, unknown> = { cells };
  if (include === 'Metadata') row.object = partialObjectMetadata(obj, apiVersion);
  else if (include === 'Object') row.object = obj;
  return row;
}

export function table(
  def: ResourceDefinition,
  items: KubeObject[],
  listMeta: Record<string, unknown>,
  include: IncludeObject,
  withColumns = true,
  apiVersion: MetaAPIVersion = 'meta.k8s.io/v1',
): Record<string, unknown> {
  const now = Date.now();
  return {
    kind: 'Table',
    apiVersion,
    metadata: listMeta,
    columnDefinitions: withColumns ? tableColumns(def) : null,
    rows: items.map((o) => tableRow(def, o, include, now, apiVersion)),
  };
}
