// Messages between the main thread and the git engine worker (worker-thread.ts). Everything is
// structured-clone data: commit inputs and results, typed errors as {reason, message}, and the
// lease calls the worker makes on the main thread's Store.
import type { CommitInput, CommitResult, FolderInput, GitEngineOptions, ObjectRef, ScanInput } from './engine.js';
import type { ScanReport } from '../analyzer/types.js';
import type { GitErrorReason } from './errors.js';

export type WorkerEngineOptions = Omit<GitEngineOptions, 'lease' | 'http'> & { useLeases: boolean };

export type LeaseOp = 'acquireLease' | 'renewLease' | 'checkLease' | 'releaseLease';

export type ToWorker =
  | { type: 'commit'; id: number; input: CommitInput }
  /** A slice of a large commit's changes, sent ahead of its 'commit' message (which then carries none of them). */
  | { type: 'changes'; id: number; changes: CommitInput['changes'] }
  | { type: 'list'; id: number; input: FolderInput }
  | { type: 'scan'; id: number; input: ScanInput }
  /** Stop commit `id`'s remote work now (cancel.ts); it fails with Cancelled. */
  | { type: 'cancel'; id: number }
  | { type: 'lease-reply'; id: number; ok: true; value: unknown }
  | { type: 'lease-reply'; id: number; ok: false; message: string };

export type FromWorker =
  /** Sent once, when the thread has loaded its modules and built its engine: it answers at once from now on. */
  | { type: 'ready' }
  | { type: 'result'; id: number; ok: true; result: CommitResult }
  | { type: 'listing'; id: number; ok: true; refs: ObjectRef[] }
  | { type: 'scanned'; id: number; ok: true; report: ScanReport }
  | { type: 'result'; id: number; ok: false; reason: GitErrorReason | 'Internal'; message: string; retryable: boolean }
  | { type: 'lease'; id: number; op: LeaseOp; args: unknown[] };
