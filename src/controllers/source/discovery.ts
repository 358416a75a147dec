// Resolving a GitTarget's `spec.resources` entry against the source's discovery: which version
// (the group's preferred one when the entry names none), which kind, whether it is namespaced, and
// whether it can be listed and watched at all. An unknown type is an answer, not an exception.
import { SourceError, type SourceClient } from './client.js';

export interface ResourceRule {
  group: string;
  version?: string;
  resource: string;
}

export interface ResolvedType {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

export type Resolution = { ok: true; type: ResolvedType } | { ok: false; message: string };

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs?: string[];
}

/** Cached discovery of one source cluster. Documents are re-read after `ttlMs`, and once on a miss. */
export class Discovery {
  private groups: { at: number; preferred: Map<string, string>; versions: Map<string, string[]> } | undefined;
  private readonly resources = new Map<string, { at: number; list: APIResource[] | undefined }>();
  /** Reads in flight: GitTargets sharing this source (sources.ts) resolving together ask once. */
  private readonly inflight = new Map<string, Promise<unknown>>();

  constructor(
    private readonly client: SourceClient,
    private readonly ttlMs = 30_000,
  ) {}

  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let p = this.inflight.get(key) as Promise<T> | undefined;
    if (!p) {
      p = read().finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  private async groupIndex(force: boolean) {
    if (this.groups && !force && Date.now() - this.groups.at < this.ttlMs) return this.groups;
    return this.once(`groups${force ? '!' : ''}`, () => this.readGroups());
  }

  private async readGroups() {
    const preferred = new Map<string, string>();
    const versions = new Map<string, string[]>();
    const core = await this.client.getJSON<{ versions?: string[] }>('/api');
    if (Array.isArray(core.versions) && core.versions.length) {
      versions.set('', core.versions);
      preferred.set('', core.versions.includes('v1') ? 'v1' : core.versions[0]!);
    }
    const apis = await this.client.getJSON<{ groups?: Array<{ name: string; preferredVersion?: { version: string }; versions?: Array<{ version: string }> }> }>('/apis');
    for (const g of apis.groups ?? []) {
      const vs = (g.versions ?? []).map((v) => v.version);
      versions.set(g.name, vs);
      const p = g.preferredVersion?.version ?? vs[0];
      if (p) preferred.set(g.name, p);
    }
    return (this.groups = { at: Date.now(), preferred, versions });
  }

  private async resourceList(group: string, version: string, force: boolean): Promise<APIResource[] | undefined> {
    const key = `${group}/${version}`;
    const hit = this.resources.get(key);
    if (hit && !force && Date.now() - hit.at < this.ttlMs) return hit.list;
    return this.once(`${key}${force ? '!' : ''}`, () => this.readResources(group, version));
  }

  private async readResources(group: string, version: string): Promise<APIResource[] | undefined> {
    const key = `${group}/${version}`;
    let list: APIResource[] | undefined;
    try {
      const doc = await this.client.getJSON<{ resources?: APIResource[] }>(group === '' ? `/api/${version}` : `/apis/${group}/${version}`);
      list = doc.resources ?? [];
    } catch (e) {
      if (!(e instanceof SourceError && e.reason === 'NotFound')) throw e;
    }
    this.resources.set(key, { at: Date.now(), list });
    return list;
  }

  /** Rejects only when discovery itself fails (unreachable, 401, 403); an unknown type resolves `ok: false`. */
  async resolve(rule: ResourceRule): Promise<Resolution> {
    const first = await this.tryResolve(rule, false);
    // A miss may be a type that appeared after the last read (a new CRD): look once more, fresh.
    return first.ok ? first : this.tryResolve(rule, true);
  }

  private async tryResolve(rule: ResourceRule, force: boolean): Promise<Resolution> {
    const gv = (v: string) => (rule.group ? `${rule.group}/${v}` : v);
    const idx = await this.groupIndex(force);
    const versions = idx.versions.get(rule.group);
    if (!versions) return { ok: false, message: `the source serves no API group "${rule.group}"` };
    const version = rule.version || idx.preferred.get(rule.group)!;
    if (!versions.includes(version)) return { ok: false, message: `the source does not serve ${gv(version)} (it serves ${versions.map(gv).join(', ')})` };
    const list = await this.resourceList(rule.group, version, force);
    const r = list?.find((x) => x.name === rule.resource);
    if (!r) return { ok: false, message: `the source serves no resource "${rule.resource}" in ${gv(version)}` };
    const verbs = r.verbs ?? [];
    if (!verbs.includes('list') || !verbs.includes('watch')) {
      return { ok: false, message: `${rule.resource} in ${gv(version)} cannot be listed and watched (verbs: ${verbs.join(', ') || 'none'})` };
    }
    return { ok: true, type: { group: rule.group, version, resource: rule.resource, kind: r.kind, namespaced: r.namespaced } };
  }
}

/** The collection path of a type, in one namespace or across all of them. */
export function collectionPath(t: ResolvedType, namespace?: string): string {
  const base = t.group === '' ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`;
  return t.namespaced && namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${t.resource}` : `${base}/${t.resource}`;
}
