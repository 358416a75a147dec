// The field set a wide fieldsV1 node (WIDE_NODE keys or more, with a remembered text) decodes to,
// kept with the node. Such a node is immutable (src/storage/known-json.ts) and copies of the stored
// object share it (work.ts cloneWork), while the managedFields entry around it is copied, so
// managed-fields.ts's pairing by entry misses: a re-apply of a 3 MiB list listed its 136,000 keys
// again (Object.keys alone, 30-45 ms in one step). Field sets are never changed once built
// (fieldset.ts), so the decoded set is shared too. Registered by the code that encodes such a node
// (fieldset.ts toFieldsV1Work) and by the decoder (fieldsv1-decode.ts); generic, so that neither
// module imports the other through it.

const DECODED = new WeakMap<object, object>();

/** Records that the wide fieldsV1 `node` decodes to `set`. */
export function rememberDecoded(node: object, set: object): void {
  DECODED.set(node, set);
}

/** The set `node` decodes to, if one was recorded. */
export function decodedOf<T extends object>(node: object): T | undefined {
  return DECODED.get(node) as T | undefined;
}
