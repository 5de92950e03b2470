/**
 * Class brands: `instanceof` that holds across copies of kq in one process. A second copy can still meet ours (an
 * older release without the package claim, a bundler that inlined one, a vm context): its `Signature`, `Retry` or
 * `App` is another class, and a plain `instanceof` is false without a word (issue #30). A branded class answers
 * `instanceof` by an id on its prototype instead, under a `Symbol.for` key every copy and realm shares, so no call
 * site changes and subclasses keep working.
 */

/** The key of a branded prototype's own id; `Symbol.for` so every copy of @kq/core reads the same one. */
const CLASS_BRAND = Symbol.for('kq.class-brand');

const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];

type Prototype = Record<symbol, unknown>;
type BrandableClass = abstract new (...args: never[]) => object;

/**
 * Marks `cls` with `id` (`'<package>:<class>'`, e.g. `'@kq/worker:Signature'`): `x instanceof cls` becomes true for
 * an instance of the class of that id from any copy, and of their subclasses. A subclass that is not branded itself
 * keeps the ordinary `instanceof` (so a user's `class MyError extends KqError` stays its own), and `instanceof` a
 * branded subclass (`ContentDisallowed`) stays false for its siblings.
 */
export function brandClass(cls: BrandableClass, id: string): void {
  Object.defineProperty(cls.prototype, CLASS_BRAND, { value: id, enumerable: false, writable: false, configurable: false });
  // Subclasses inherit this static; it reads the brand of the class it is called on (`this`).
  if (!Object.hasOwn(cls, Symbol.hasInstance)) {
    Object.defineProperty(cls, Symbol.hasInstance, { value: hasBrandedInstance, enumerable: false, writable: false, configurable: false });
  }
}

/** True when a prototype in `value`'s chain is branded `id` (see `brandClass`): a shape check by brand, no class needed. */
export function isBrandedInstance(value: unknown, id: string): boolean {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  for (let prototype = Object.getPrototypeOf(value) as Prototype | null; prototype !== null; prototype = Object.getPrototypeOf(prototype) as Prototype | null) {
    // The nearest brand at or above this prototype: `id` means one up the chain is branded `id`, none means none is.
    const brand = prototype[CLASS_BRAND];
    if (brand === id) return true;
    if (brand === undefined) return false;
  }
  return false;
}

function hasBrandedInstance(this: BrandableClass, value: unknown): boolean {
  const prototype = this.prototype as Prototype | undefined;
  const id = prototype !== undefined && Object.hasOwn(prototype, CLASS_BRAND) ? prototype[CLASS_BRAND] : undefined;
  return typeof id === 'string' ? isBrandedInstance(value, id) : ordinaryHasInstance.call(this, value);
}
