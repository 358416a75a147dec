// The namespace lifecycle the sandbox keeps, as a real cluster does (kube-apiserver's
// NamespaceLifecycle admission, the root-CA publisher and the namespace controller), simplified:
// - a namespaced object is created only in an existing namespace (404 `namespaces "x" not found`),
//   and not in one being deleted (403, as kube answers for a Terminating namespace);
// - a new namespace is Active and gets its `kube-root-ca.crt` ConfigMap (key `ca.crt`);
// - deleting a namespace removes it at once, then deletes every object it held, through the
//   registries (objects with finalizers stay, marked for deletion, until their finalizers are gone).
//   There is no Terminating phase and no `kubernetes` finalizer.
import * as status from '../api/status.js';
import type { KubeObject } from '../model/object.js';
import { type RequestContext, systemContext, systemWriteOptions } from './context.js';
import type { Registry } from './registry.js';
import type { ResourceStrategy } from './strategy.js';

/** The served registries, as the namespace lifecycle needs them (implemented by Registries). */
export interface RegistrySet extends Iterable<Registry> {
  get(plural: string): Registry | undefined;
}

export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
/** The namespaces a sandbox starts with, as a fresh cluster has them. */
export const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export async function requireNamespace(regs: RegistrySet, ctx: RequestContext, namespace: string, target: { gr: status.GroupResource; name: string }): Promise<void> {
  const namespaces = regs.get('namespaces');
  if (!namespaces) return;
  const ns = await namespaces.get(ctx, '', namespace); // NotFound: namespaces "<namespace>" not found
  if (ns.metadata.deletionTimestamp) throw status.namespaceTerminating(target.gr, target.name, namespace);
}

function isStatus(e: unknown, reason: string): boolean {
  return e instanceof status.StatusError && e.status.reason === reason;
}

export function namespaceStrategy(base: ResourceStrategy, regs: RegistrySet, rootCAPem: string): ResourceStrategy {
  return {
    ...base,
    prepareForCreate(ctx, obj) {
      base.prepareForCreate(ctx, obj);
      obj.status = { phase: 'Active' };
    },
    async afterCreate(ctx, obj) {
      await base.afterCreate?.(ctx, obj);
      const configMaps = regs.get('configmaps');
      if (!configMaps) return;
      const name = obj.metadata.name!;
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ROOT_CA_CONFIGMAP, namespace: name }, data: { 'ca.crt': rootCAPem } };
      try {
        await configMaps.create(systemContext(ctx.cluster), name, cm, systemWriteOptions());
      } catch (e) {
        if (!isStatus(e, 'AlreadyExists')) throw e;
      }
    },
    async afterDelete(ctx, obj) {
      await base.afterDelete?.(ctx, obj);
      await deleteContents(regs, ctx.cluster, obj.metadata.name!);
    },
  };
}

/** Deletes every namespaced object of `namespace` (what the namespace controller does). */
export async function deleteContents(regs: RegistrySet, cluster: string, namespace: string): Promise<void> {
  const ctx = systemContext(cluster);
  for (const reg of regs) {
    if (!reg.def.namespaced) continue;
    const { items } = await reg.list(cluster, namespace);
    for (const item of items) {
      try {
        await reg.delete(ctx, namespace, item.metadata.name!, { dryRun: false });
      } catch (e) {
        if (!isStatus(e, 'NotFound')) throw e; // gone already
      }
    }
  }
}

/** Creates the initial namespaces that do not exist yet (each gets its kube-root-ca.crt). */
export async function ensureInitialNamespaces(regs: RegistrySet, cluster?: string): Promise<KubeObject[]> {
  const namespaces = regs.get('namespaces');
  if (!namespaces) return [];
  const ctx = systemContext(cluster);
  const created: KubeObject[] = [];
  for (const name of INITIAL_NAMESPACES) {
    try {
      await namespaces.get(ctx, '', name);
      continue;
    } catch (e) {
      if (!isStatus(e, 'NotFound')) throw e;
    }
    try {
      created.push((await namespaces.create(ctx, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, systemWriteOptions())).object);
    } catch (e) {
      if (!isStatus(e, 'AlreadyExists')) throw e; // another replica was first
    }
  }
  return created;
}
