/**
 * Python's fnmatch, as Celery and Kombu use it: pidbox destinations (`-d 'celery@*'`), task routes (`'proj.*'`) and the
 * security cert store's glob all match names this way: `*`, `?`, `[seq]`, `[!seq]`, against the whole name.
 */
export function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i] as string;
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) {
        source += '\\[';
        continue;
      }
      let set = pattern.slice(i + 1, end);
      if (set.startsWith('!')) set = `^${set.slice(1)}`;
      source += `[${set.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}
