// When a window closes, as pure functions of the GitTarget's spec.commit and the window.
import type { KubeObject } from '../../storage/types.js';
import type { Window, WindowRecord } from './record.js';
import type { GitTargetSpec } from '../../api/gittarget.js';

export interface CommitPolicy {
  mode: 'Auto' | 'OnRequest';
  idleMs: number;
  maxAgeMs: number;
}

export const DEFAULT_POLICY: CommitPolicy = { mode: 'Auto', idleMs: 5_000, maxAgeMs: 600_000 };

export function policyOf(gitTarget: KubeObject | undefined): CommitPolicy {
  const c: Partial<NonNullable<GitTargetSpec['commit']>> = (gitTarget?.spec as GitTargetSpec | undefined)?.commit ?? {};
  return {
    mode: c.mode === 'OnRequest' ? 'OnRequest' : 'Auto',
    idleMs: typeof c.idleSeconds === 'number' ? c.idleSeconds * 1000 : DEFAULT_POLICY.idleMs,
    maxAgeMs: typeof c.maxAgeSeconds === 'number' ? c.maxAgeSeconds * 1000 : DEFAULT_POLICY.maxAgeMs,
  };
}

/** Whether each change is a window of its own (Auto with idleSeconds 0), unless a request collects them. */
export function commitsEachChange(p: CommitPolicy): boolean {
  return p.mode === 'Auto' && p.idleMs === 0;
}

/** When the open window `w` closes, and why: the earliest of its triggers. */
export function closeDue(w: Window, p: CommitPolicy): { at: number; reason: string } {
  const due: Array<{ at: number; reason: string }> = [{ at: w.openedAt + p.maxAgeMs, reason: 'max-age' }];
  if (w.request) due.push({ at: w.request.closeAt, reason: 'commit-request' });
  else if (p.mode === 'Auto') due.push({ at: w.lastChangeAt + p.idleMs, reason: 'idle' });
  return due.reduce((a, b) => (b.at < a.at ? b : a));
}

/** The open window: the last one, unless it is closed (whoever's it is; see mayClaim). */
export function openWindow(r: WindowRecord): Window | undefined {
  const w = r.windows[r.windows.length - 1];
  return w && !w.closing && w.kind === 'changes' ? w : undefined;
}

/**
 * Whether a CommitRequest that `claims` an author key (its submitter's) may attach to `w`: any
 * request claims an unattributed window; an audited user's window only that user's request;
 * an unresolved window nobody's (no one may finalize work no fact tied to them).
 */
export function mayClaim(w: Window, claims: string | undefined): boolean {
  return w.authorKey === '' || (claims !== undefined && w.authorKey === claims);
}
