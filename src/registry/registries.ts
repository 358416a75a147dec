// The registries of every served resource, found by group/version/resource (HTTP routing) or by
// plural (in-process callers). With the sandbox on, it also carries the namespace lifecycle: a
// namespaced object can only be created in an existing namespace, a namespace gets its
// kube-root-ca.crt ConfigMap, and deleting a namespace deletes what it holds.
import { apiVersionOf, type ResourceDefinition } from '../api/definition.js';
import type { Store } from '../storage/types.js';
import { Registry, type RegistryOptions } from './registry.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';
import { namespaceStrategy, requireNamespace, type RegistrySet } from './namespaces.js';

export interface RegistriesOptions {
  /** Strategies beyond what a definition implies, keyed by plural (e.g. commitrequests' assert-author). */
  strategies?: Record<string, ResourceStrategy>;
  /**
   * The namespace lifecycle of a real cluster (on when the sandbox serves namespaces). rootCAPem is
   * the `ca.crt` of each namespace's kube-root-ca.crt ConfigMap.
   */
  namespaceLifecycle?: { rootCAPem: string };
  /**
   * Without the sandbox: admits a namespaced create by the hosting cluster's namespaces
   * (src/admission/namespace-lifecycle.ts). Absent: every namespace is admitted.
   */
  namespaceAdmission?: RegistryOptions['requireNamespace'];
}

export class Registries implements RegistrySet {
  private readonly byPlural = new Map<string, Registry>();
  private readonly byGVR = new Map<string, Registry>();

  constructor(store: Store, defs: ResourceDefinition[], opts: RegistriesOptions = {}) {
    const lifecycle = opts.namespaceLifecycle;
    const regOpts: RegistryOptions = lifecycle
      ? { requireNamespace: (ctx, ns, target) => requireNamespace(this, ctx, ns, target) }
      : { requireNamespace: opts.namespaceAdmission };
    for (const def of defs) {
      // Two groups may share a plural (core/v1 and events.k8s.io/v1 `events`): the first listed
      // keeps the bare plural, the other is found as `<plural>.<group>`.
      const pluralKey = this.byPlural.has(def.plural) ? `${def.plural}.${def.group}` : def.plural;
      if (this.byPlural.has(pluralKey)) throw new Error(`two served resources share the plural ${def.plural}`);
      let strategy = opts.strategies?.[def.plural] ?? definitionStrategy(def);
      if (lifecycle && def.plural === 'namespaces' && def.group === '') strategy = namespaceStrategy(strategy, this, lifecycle.rootCAPem);
      const reg = new Registry(def, store, strategy, regOpts);
      this.byPlural.set(pluralKey, reg);
      this.byGVR.set(`${apiVersionOf(def)}/${def.plural}`, reg);
    }
  }

  /** The registry of a resource by plural (`gittargets`, `configmaps`, ...). */
  get(plural: string): Registry | undefined {
    return this.byPlural.get(plural);
  }

  /** The registry serving /api(s)/<group>/<version>/<resource>; '' is the core group. */
  lookup(group: string, version: string, resource: string): Registry | undefined {
    return this.byGVR.get(`${group ? `${group}/` : ''}${version}/${resource}`);
  }

  has(plural: string): boolean {
    return this.byPlural.has(plural);
  }

  /**
   * Compiles the schema validators of `group`'s resources, one per turn of the event loop. Left to
   * the first write of each resource, loading ajv and compiling a schema held the event loop for
   * 150-700 ms inside that request (the attack bench's dry-run create of a 3 MiB list, the first
   * write of its server: a 773 ms stall and /healthz p99 1,040 ms at load 7). A schema that fails
   * to compile is left to fail its first write, as before.
   */
  async compileValidators(group: string): Promise<void> {
    for (const reg of this.byPlural.values()) {
      if (reg.def.group !== group || reg.schemaValidator.compiled()) continue;
      await new Promise<void>((resolve) => setImmediate(resolve));
      try {
        reg.schemaValidator.compile();
      } catch {
        // The first validation compiles again and reports the failure to its request.
      }
    }
  }

  [Symbol.iterator](): Iterator<Registry> {
    return this.byPlural.values();
  }
}
