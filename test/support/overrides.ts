// A real object with a few methods replaced, for tests that inject a failure or count calls
// (test/unit/replica-shards.test.ts, test/controllers/windows.test.ts). Every other property is
// read from the object itself and its methods run on it, so state they keep lands on the object:
// a wrapper made with Object.create(object) would instead take every field a method sets through
// `this` as its own (the real object never sees it), and private fields would throw.

/** `target`, except for the methods in `overrides`; writes through it land on `target`. */
export function withOverrides<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get: (t, prop) => {
      if (Object.hasOwn(overrides, prop)) return (overrides as Record<PropertyKey, unknown>)[prop];
      const v = Reflect.get(t, prop, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}
