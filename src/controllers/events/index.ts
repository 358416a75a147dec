// The Events the controllers emit, in one place so their reasons and notes stay one vocabulary
// (docs/architecture.md, "Events"). Each is a call on the replica's EventRecorder (recorder.ts).
import type { KubeObject } from '../../storage/types.js';
import { regardingOf, type EventRecorder } from './recorder.js';

export { CorrelatingRecorder, NO_EVENTS, REPORTING_CONTROLLER, regardingOf, type EventRecorder, type EventSink, type Regarding } from './recorder.js';
export { HostingEventSink, NoEventSink, SandboxEventSink } from './sinks.js';

/** A window of the GitTarget landed: Normal Committed with the sha, branch and the commit's subject. */
export function committed(events: EventRecorder, gt: KubeObject, sha: string, branch: string, message: string): void {
  events.record(regardingOf(gt), 'Normal', 'Committed', 'Commit', `Committed ${sha} to ${branch}: ${message.split('\n')[0]}`);
}

/** A commit or push of the GitTarget failed (it is retried): Warning PushFailed with the engine's reason and why. */
export function pushFailed(events: EventRecorder, gt: KubeObject, reason: string, message: string): void {
  events.record(regardingOf(gt), 'Warning', 'PushFailed', 'Push', `${reason}: ${message}`);
}

/**
 * The authority a GitTarget runs under is gone (its writer lost list/watch or a Secret's get):
 * Warning AuthorityRevoked, `reason` saying which permission (never a token or Secret data).
 */
export function authorityRevoked(events: EventRecorder, gt: KubeObject, reason: string): void {
  events.record(regardingOf(gt), 'Warning', 'AuthorityRevoked', 'Authorize', reason);
}

/** A CommitRequest finished: its outcome is the reason (Committed, NothingToCommit, AlreadyPresent: Normal; Failed: Warning). */
export function commitRequestOutcome(events: EventRecorder, cr: KubeObject, outcome: 'Committed' | 'NothingToCommit' | 'AlreadyPresent' | 'Failed', message: string): void {
  events.record(regardingOf(cr), outcome === 'Failed' ? 'Warning' : 'Normal', outcome, 'Commit', message);
}
