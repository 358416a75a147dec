// The value of every member that is not also a parent in fieldsV1 (`"v:\"a\"": {}`): one frozen
// object shared by all of them, defined with the storage code that also gives it to every stored
// object it parses (src/storage/shared-values.ts), so an object read back from Redis or the
// embedded store's log shares it as one built here does.
export { LEAF } from '../../storage/shared-values.js';
// Wide fieldsV1 nodes carry their JSON text, and are shared rather than copied (cloneWork).
export { knownJSON } from '../../storage/known-json.js';
