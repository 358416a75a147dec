// How a storage failure reaches the client: the Status kube-apiserver answers for the same
// failure of etcd (apiserver's storage/errors), so a client's retry logic reads it the same way.
import * as status from '../api/status.js';
import type { StorageError } from '../storage/types.js';

/** The Status error for `e`, a failure of the store while handling object `name` of `gr`. */
export function statusOfStorageError(gr: { group: string; resource: string }, name: string, e: StorageError): status.StatusError {
  switch (e.code) {
    case 'NotFound':
      return status.notFound(gr, name);
    case 'AlreadyExists':
      return status.alreadyExists(gr, name);
    case 'Conflict':
      return status.conflict(gr, name, status.OBJECT_MODIFIED);
    case 'Expired':
      return status.gone(e.message);
    case 'Timeout': {
      const tooLarge = /^Too large resource version: (\d+), current: (\d+)$/.exec(e.message);
      return tooLarge ? status.tooLargeResourceVersion(tooLarge[1]!, tooLarge[2]!) : status.timeout(e.message);
    }
    case 'Unavailable':
      return status.serviceUnavailable(`storage is unavailable: ${e.message}`, 1);
  }
}
