// Who writes, and how: the request context every registry call takes, the options of a write, and
// the identity in-process controllers act under. Controllers use the same registry calls as HTTP
// handlers, so their writes get the same validation, conflict handling and storage metrics.
import type { FieldValidation } from '../api/validation.js';
import type { UserInfo } from '../auth/types.js';
import type { KubeObject } from '../model/object.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';

export interface RequestContext {
  /** Logical cluster (kcp workspace); DEFAULT_CLUSTER for a plain deployment. */
  cluster: string;
  user: UserInfo;
}

export interface WriteOptions {
  dryRun: boolean;
  fieldManager: string;
  fieldValidation: FieldValidation;
  /** Server-side apply only: take over conflicting fields. */
  force?: boolean;
}

export interface WriteResult {
  object: KubeObject;
  warnings: string[];
}

export interface DeleteOptions {
  dryRun: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** The user in-process controllers (and the sandbox's own bookkeeping) act as. */
export const SYSTEM_USER: UserInfo = { username: 'system:reverser-apiserver:controller', groups: ['system:authenticated'] };

/** A request context for the server's own writes in `cluster` (the default cluster unless given). */
export function systemContext(cluster: string = DEFAULT_CLUSTER): RequestContext {
  return { cluster, user: SYSTEM_USER };
}

/** Write options of the server's own writes: strict validation, field manager `reverser-apiserver`. */
export function systemWriteOptions(fieldManager = 'reverser-apiserver'): WriteOptions {
  return { dryRun: false, fieldManager, fieldValidation: 'Strict' };
}
