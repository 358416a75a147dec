// The value of every member that is not also a parent in fieldsV1 (`"v:\"a\"": {}`): one frozen
// object shared by all of them instead of one per member (136,000 for a 3 MiB list), encoded by
// fieldset.ts, shared rather than copied by work.ts cloneWork and written without a look inside by
// src/apiserver/respond.ts. Nothing writes into fieldsV1 once encoded; frozen, a write would throw
// instead of changing them all.
export const LEAF: Record<string, never> = Object.freeze({});
