/**
 * Python compares `str` by code point; JavaScript's `<` compares UTF-16 code units, which disagree only when a
 * surrogate (an astral character) meets a BMP character above U+DFFF. Remapping the two ranges restores
 * code-point order without decoding the strings.
 */
export function comparePythonStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let ca = a.charCodeAt(i);
    let cb = b.charCodeAt(i);
    if (ca === cb) continue;
    if (ca >= 0xd800 && cb >= 0xd800) {
      ca = ca >= 0xe000 ? ca - 0x800 : ca + 0x2000;
      cb = cb >= 0xe000 ? cb - 0x800 : cb + 0x2000;
    }
    return ca - cb;
  }
  return a.length - b.length;
}
