import { globToRegExp } from '../glob-pattern';

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
