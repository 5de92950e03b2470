/**
 * The value every copy of kq in this process shares under `key`, made by the first copy that asks. For module state
 * that objects from another copy must find (the periodic tasks defined on an app, the task running now): a copy's
 * own module variable would be a second registry, empty for the other copy's objects (issue #30). Put a version in
 * the key (`'kq.periodic-tasks.v1'`) and change it when the value's shape changes, so copies of different releases
 * keep apart.
 */
export function processWide<T>(key: string, create: () => T): T {
  const symbol = Symbol.for(key);
  const shared = globalThis as Record<symbol, unknown>;
  if (!Object.hasOwn(shared, symbol)) {
    Object.defineProperty(globalThis, symbol, { value: create(), enumerable: false, writable: false, configurable: false });
  }
  return shared[symbol] as T;
}
