/** How a request's `pattern` selects nodes: `glob` (Python's fnmatch) or `pcre` (Python's `re.match`). */
export type NodeMatcher = 'glob' | 'pcre';

const cache = new Map<string, RegExp>();

/** True when `nodename` is selected by `pattern` under `matcher`, as kombu.matcher.match decides. */
export function matchNode(nodename: string, pattern: string, matcher: NodeMatcher | string = 'glob'): boolean {
  const key = `${matcher}\u0000${pattern}`;
  let regex = cache.get(key);
  if (!regex) {
    if (matcher === 'glob') regex = globToRegExp(pattern);
    else if (matcher === 'pcre') regex = new RegExp(`^(?:${pattern})`); // re.match anchors at the start only
    else return false;
    if (cache.size > 1000) cache.clear();
    cache.set(key, regex);
  }
  return regex.test(nodename);
}

/** fnmatch: `*`, `?`, `[seq]`, `[!seq]`, matched against the whole name. */
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
