// Re-verification of the authority GitTargets run under (status.authority, recorded by
// src/registry/gittarget-strategy.ts at each write of what is read). One loop per replica, every
// --authority-reverify-interval, asks the authorizer about every GitTarget's recorded user — the
// answers cached for the pass, so a thousand GitTargets of one tenant cost that tenant's distinct
// questions, and no GitTarget has a timer of its own. The mirror (src/controllers/mirror/) asks
// `verdict` before it reads and stops a GitTarget whose grant is gone or unconfirmed.
//
// Staleness: a grant counts from the newer of its admission (status.authority.verifiedAt) and the
// last pass that confirmed it. A pass that denies stops the mirror at once (AuthorityRevoked); a
// pass that cannot decide (authorizer error) leaves the last confirmation standing, and once that
// is older than two intervals the mirror stops (AuthorityUnverified): never longer than one
// interval past a failed pass on a grant nobody confirmed.
import type { Authorizer, AuthorizationResult, Attributes } from '../../auth/types.js';
import { checkAuthority, questionKey, requiredPermissions, userOfAuthority, type Authority } from '../../auth/source-authority.js';
import { goQuote } from '../../auth/messages.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject } from '../../storage/types.js';
import { DEFAULT_CLUSTER } from '../../storage/types.js';
import { clusterOf, keyOf, type Informer } from '../runtime/index.js';
import { runEvery } from '../../periodic/shared-timer.js';

export const AUTHORITY_REVOKED = 'AuthorityRevoked';
export const AUTHORITY_UNVERIFIED = 'AuthorityUnverified';
export const AUTHORITY_MISSING = 'AuthorityMissing';

export type AuthorityVerdict =
  | { ok: true }
  /** pending: no pass has run since start and the admission is old; decide after the first pass. */
  | { ok: false; pending?: boolean; reason: string; message: string };

interface Entry {
  /** Identity + questions this entry answered; an entry for other questions does not apply. */
  questions: string;
  /** Start of the last pass that confirmed the grant (0: none). */
  grantedAt: number;
  deniedAt?: number;
  missing?: string;
  error?: string;
}

export interface AuthorityVerifierOptions {
  authorizer: Authorizer;
  gitTargets: Informer;
  intervalMs: number;
  log: Logger;
  now?: () => number;
}

function authorityOf(obj: KubeObject): Authority | undefined {
  const a = (obj.status as { authority?: Authority } | undefined)?.authority;
  return a && typeof a.username === 'string' ? a : undefined;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export class AuthorityVerifier {
  private readonly entries = new Map<string, Entry>();
  /** The verdict state the mirror last saw per key: a pass that changes it wakes that key. */
  private readonly seen = new Map<string, string>();
  private readonly listeners = new Set<(key: string) => void>();
  private stopTimer: (() => void) | undefined;
  private inPass: Promise<void> | undefined;
  private passes = 0;
  private readonly now: () => number;

  constructor(private readonly opts: AuthorityVerifierOptions) {
    this.now = opts.now ?? Date.now;
  }

  onChange(fn: (key: string) => void): void {
    this.listeners.add(fn);
  }

  /**
   * Runs a pass now and then every interval, in the wake-up of the process's other jobs of that
   * period (src/periodic/shared-timer.ts; unref'd: the server's listeners keep the process up).
   */
  start(): void {
    void this.pass();
    this.stopTimer = runEvery(this.opts.intervalMs, () => void this.pass());
  }

  async stop(): Promise<void> {
    this.stopTimer?.();
    this.stopTimer = undefined;
    await this.inPass;
  }

  private questions(obj: KubeObject, a: Authority): string {
    const cluster = clusterOf(obj);
    return JSON.stringify([cluster, a.username, a.uid ?? '', a.groups ?? [], a.extra ?? {}, requiredPermissions(obj.spec, obj.metadata.namespace ?? '')]);
  }

  verdict(key: string, obj: KubeObject): AuthorityVerdict {
    const v = this.evaluate(obj);
    this.seen.set(key, v.ok ? 'ok' : v.pending ? 'pending' : v.reason);
    return v;
  }

  private evaluate(obj: KubeObject): AuthorityVerdict {
    const a = authorityOf(obj);
    if (!a) {
      return {
        ok: false,
        reason: AUTHORITY_MISSING,
        message: 'no authority is recorded in status.authority (the GitTarget was not written through the API since the server records one): nothing is mirrored until a user who holds the permissions it needs updates its spec',
      };
    }
    const who = `User ${goQuote(a.username)}`;
    const e = this.entries.get(keyOf(obj, clusterOf(obj)));
    const entry = e && e.questions === this.questions(obj, a) ? e : undefined;
    const admitted = Date.parse(a.verifiedAt);
    const grantedAt = Math.max(Number.isFinite(admitted) ? admitted : 0, entry?.grantedAt ?? 0);
    if (entry?.deniedAt !== undefined && entry.deniedAt >= grantedAt) {
      return { ok: false, reason: AUTHORITY_REVOKED, message: `the authority of ${who} is revoked: ${entry.missing}; nothing is mirrored until the grant returns or a user who holds it updates the spec` };
    }
    if (this.now() - grantedAt <= 2 * this.opts.intervalMs) return { ok: true };
    const why = entry?.error ?? 'no re-verification completed';
    if (this.passes === 0) return { ok: false, pending: true, reason: AUTHORITY_UNVERIFIED, message: why };
    return {
      ok: false,
      reason: AUTHORITY_UNVERIFIED,
      message: `the authority of ${who} was last verified at ${iso(grantedAt)} and could not be re-verified since (${why}); nothing is mirrored on an unconfirmed grant`,
    };
  }

  /** One pass over every GitTarget (tests call it directly). */
  pass(): Promise<void> {
    this.inPass ??= this.runPass().finally(() => (this.inPass = undefined));
    return this.inPass;
  }

  private async runPass(): Promise<void> {
    const started = this.now();
    const answers = new Map<string, Promise<AuthorizationResult>>();
    const ask = (q: Attributes) => {
      const k = questionKey(q);
      let p = answers.get(k);
      if (!p) answers.set(k, (p = this.opts.authorizer.authorize(q)));
      return p;
    };
    const live = new Set<string>();
    let n = 0;
    for (const obj of this.opts.gitTargets.list()) {
      const a = authorityOf(obj);
      if (!a) continue;
      const cluster = clusterOf(obj);
      const key = keyOf(obj, cluster);
      live.add(key);
      const questions = this.questions(obj, a);
      const prev = this.entries.get(key);
      const kept = prev?.questions === questions ? prev.grantedAt : 0;
      const perms = requiredPermissions(obj.spec, obj.metadata.namespace ?? '');
      const r = await checkAuthority(this.opts.authorizer, userOfAuthority(a), perms, cluster === DEFAULT_CLUSTER ? undefined : cluster, ask);
      if (r.allowed) this.entries.set(key, { questions, grantedAt: started });
      else if (r.error) this.entries.set(key, { questions, grantedAt: kept, error: r.missing });
      else this.entries.set(key, { questions, grantedAt: kept, deniedAt: started, missing: r.missing });
      if (++n % 200 === 0) await new Promise((res) => setImmediate(res)); // keep serving requests during a long pass
    }
    for (const k of this.entries.keys()) if (!live.has(k)) this.entries.delete(k);
    this.passes++;
    let changed = 0;
    for (const [key, state] of this.seen) {
      const obj = this.opts.gitTargets.get(key);
      if (!obj) {
        this.seen.delete(key);
        continue;
      }
      const v = this.evaluate(obj);
      const now = v.ok ? 'ok' : v.pending ? 'pending' : v.reason;
      if (now === state) continue;
      changed++;
      for (const l of this.listeners) l(key);
    }
    this.opts.log.debug('authority re-verified', { gitTargets: n, questions: answers.size, changed, ms: this.now() - started });
  }
}
