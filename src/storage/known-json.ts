// The JSON text of values that never change once built, kept with the value so that each
// serializer writes it instead of walking it again.
//
// A server-side apply of a 3 MiB list of finalizers encodes one fieldsV1 object of 136,000 keys
// (src/registry/apply/fieldset.ts toFieldsV1Work). Every later step went through all of its keys
// once more: the store's log line (src/storage/sliced-json.ts, about 150-400 ms), the answer
// (src/apiserver/respond.ts), each copy of the stored object (src/registry/apply/work.ts cloneWork,
// twice per status write) and the stores' size estimates, where listing the keys of an object
// that wide alone costs 40 ms. Its text, made once while it is encoded (~30 ms), replaces those walks,
// and being immutable, copies share the value itself.
//
// A value is registered only by the code that built it, after the last write into it; nothing may
// write into it afterwards (fieldsV1 is never edited in place: src/registry/apply/managed-fields.ts).

const TEXT = new WeakMap<object, string>();

/** Records that `value`, never to be changed again, serializes to `text` (JSON.stringify's output). */
export function rememberJSON(value: object, text: string): void {
  TEXT.set(value, text);
}

/** The remembered JSON text of `value`, if any (then `value` is immutable). */
export function knownJSON(value: unknown): string | undefined {
  return value !== null && typeof value === 'object' ? TEXT.get(value) : undefined;
}
