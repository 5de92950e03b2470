import { pythonRepr } from '@kq/core';

/** Python's `str(value)`: text as it is, everything else as its repr (`True`, `None`, `[1.5, 2]`, `{'a': 1}`). */
export function pythonStr(value: unknown): string {
  return typeof value === 'string' ? value : pythonRepr(value);
}
