/**
 * Python's string order (by code point). JavaScript's default sort compares UTF-16 units, which differs for
 * characters above U+FFFF. (Same as `@kq/core`'s internal `comparePythonStrings`, which core does not export.)
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const x = [...a];
  const y = [...b];
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = ((x[i] as string).codePointAt(0) ?? 0) - ((y[i] as string).codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
