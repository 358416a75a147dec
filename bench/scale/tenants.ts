// The tenants of the scale bench: one sandbox namespace per tenant, its ConfigMaps, and one
// GitTarget mirroring them into its own `local:` repository. Created over HTTPS with a small pool
// of keep-alive connections, as a platform's provisioning would; each answer is checked.
import type https from 'node:https';
import { request, type Target } from '../common/load.js';

export const GV = '/apis/configbutler.ai/v1alpha1';

export const tenantNs = (i: number) => `t${String(i).padStart(5, '0')}`;

/** Runs `fn(i)` for i in [0, n) with `concurrency` in flight. */
export async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) await fn(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** 503 answers the set-up retried (after the Status's retryAfterSeconds), as a provisioning client would. */
export const retried = { unavailable: 0 };

async function must(t: Target, agent: https.Agent, method: string, path: string, body: unknown, expect: number[]): Promise<any> {
  for (let attempt = 1; ; attempt++) {
    const r = await request(t, agent, { method, path, body: JSON.stringify(body) });
    if (r.status === 503 && attempt < 10) {
      // A create is all-or-nothing (one compare-and-swap): retrying a 503 creates the object once.
      retried.unavailable++;
      const after = Number((JSON.parse(r.body) as { details?: { retryAfterSeconds?: number } }).details?.retryAfterSeconds ?? 1);
      await new Promise((res) => setTimeout(res, after * 1000));
      continue;
    }
    // The 503 was ambiguous (the write may have been applied): the retry finds it created.
    if (attempt > 1 && method === 'POST' && r.status === 409) return undefined;
    if (!expect.includes(r.status)) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return r.body ? JSON.parse(r.body) : undefined;
  }
}

export function gitTarget(ns: string, idleSeconds: number) {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'mirror', namespace: ns },
    spec: {
      repository: { url: `local:${ns}` },
      branch: 'main',
      path: '.',
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [ns] }],
      commit: { idleSeconds, maxAgeSeconds: 600, mode: 'Auto' },
    },
  };
}

/** Namespace and `objects` ConfigMaps of tenant `i` (the ConfigMaps concurrently). */
export async function createTenantSource(t: Target, agent: https.Agent, i: number, objects: number): Promise<void> {
  const ns = tenantNs(i);
  await must(t, agent, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, [201]);
  await Promise.all(
    Array.from({ length: objects }, (_, k) =>
      must(t, agent, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${k}`, namespace: ns }, data: { value: 'v0', tenant: ns } }, [201]),
    ),
  );
}

/** The GitTarget of tenant `i`. */
export async function createTenantTarget(t: Target, agent: https.Agent, i: number, idleSeconds: number): Promise<void> {
  const ns = tenantNs(i);
  await must(t, agent, 'POST', `${GV}/namespaces/${ns}/gittargets`, gitTarget(ns, idleSeconds), [201]);
}

/** Namespace, `objects` ConfigMaps and the GitTarget of tenant `i`. */
export async function createTenant(t: Target, agent: https.Agent, i: number, objects: number, idleSeconds: number): Promise<void> {
  await createTenantSource(t, agent, i, objects);
  await createTenantTarget(t, agent, i, idleSeconds);
}

/** How many GitTargets are Ready=True, the list's resourceVersion, and what holds back the others. */
export async function readyCount(t: Target, agent: https.Agent): Promise<{ ready: number; total: number; rv: string; sha: Map<string, string>; waiting: string }> {
  const r = await request(t, agent, { method: 'GET', path: `${GV}/gittargets` });
  if (r.status !== 200) throw new Error(`list GitTargets: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  const list = JSON.parse(r.body);
  const sha = new Map<string, string>();
  let ready = 0;
  const notReady: any[] = [];
  for (const o of list.items) {
    if (o.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')) ready++;
    else notReady.push(o);
    sha.set(o.metadata.namespace, o.status?.lastCommit?.sha ?? '');
  }
  return { ready, total: list.items.length, rv: list.metadata.resourceVersion, sha, waiting: describeNotReady(notReady) };
}

/**
 * The not-Ready GitTargets by their Ready condition's reason, and the conditions of the first few:
 * what a failed wait reports, so a GitTarget stuck in some state is named with that state.
 */
export function describeNotReady(items: any[], what = 'not Ready'): string {
  if (items.length === 0) return 'none';
  const byReason = new Map<string, number>();
  for (const o of items) {
    const ready = o.status?.conditions?.find((c: any) => c.type === 'Ready');
    const k = ready ? `${ready.status}/${ready.reason}` : 'no Ready condition';
    byReason.set(k, (byReason.get(k) ?? 0) + 1);
  }
  const counts = [...byReason].map(([k, v]) => `${v} ${k}`).join(', ');
  const examples = items
    .slice(0, 5)
    .map((o) => {
      const conds = (o.status?.conditions ?? []).map((c: any) => `${c.type}=${c.status} ${c.reason}: ${String(c.message ?? '').slice(0, 160)}`).join('; ');
      return `  ${o.metadata.namespace}/${o.metadata.name} (generation ${o.metadata.generation}, observed ${o.status?.observedGeneration ?? '-'}, lastCommit ${o.status?.lastCommit?.sha?.slice(0, 8) ?? '-'}): ${conds || 'no conditions'}`;
    })
    .join('\n');
  return `${items.length} ${what} (${counts}):\n${examples}`;
}
