// The hook the write handlers (handlers/write.ts) call after each stored write, before the client
// is answered. The API server owns this contract; the sandbox's attribution facts
// (src/attribution/sandbox.ts) implement it, so the request path imports nothing from attribution/.

/** The verbs of a stored write. */
export type WriteVerb = 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** The identity of a request as the handlers know it (auth/types.ts UserInfo). */
export interface RequestUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** One successful, stored (not dry-run) write of the request path. */
export interface ObservedWrite {
  cluster: string;
  verb: WriteVerb;
  group: string;
  resource: string;
  namespace: string;
  /** The object as stored (create/update/patch) or as it was removed (delete); empty for deletecollection. */
  object?: { metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } };
  /** deletecollection: the objects it removed. */
  removed?: { metadata: { uid?: string } }[];
  /** The effective user (the impersonated one when the request impersonated). */
  user: RequestUser;
  /** The authenticated user who impersonated, when the request impersonated. */
  impersonator?: RequestUser;
}

/** Told of every observed write; a failure is logged by the handler, never answered to the client. */
export type WriteObserver = (w: ObservedWrite) => Promise<void>;
