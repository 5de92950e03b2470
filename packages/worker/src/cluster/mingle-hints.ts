import { compareCodePoints } from './code-point-order';
import { SOFTWARE_INFO } from '../protocol/software-info';

/** What a watcher tells a starting kq worker's Mingle: whom it takes for the watchers, and every peer it knows alive. */
export interface MingleHints {
  watchers: string[];
  peers: string[];
}

/**
 * The watchers named by `self` (a kq worker) among `names` (itself and the others it takes for watchers): the
 * `watchers` lowest names, or all when every worker watches.
 */
export function namedWatchers(self: string, names: Iterable<string>, watchers: number): string[] {
  const sorted = [...new Set([self, ...names])].sort(compareCodePoints);
  return watchers === Infinity ? sorted : sorted.slice(0, watchers);
}

/**
 * The hints of a worker whose Gossip is still starting (its node may answer before Gossip has): itself and the
 * watchers Mingle named to it, as a worker deciding whether to watch names them. Without a name, a kq worker asking
 * would collect replies until Mingle's timeout passed.
 */
export function startingHints(self: string, neighbours: ReadonlyMap<string, Record<string, unknown>>, watchers: number): MingleHints {
  const named = [...neighbours].filter(([, fields]) => fields['sw_ident'] === SOFTWARE_INFO.sw_ident).map(([node]) => node);
  return { watchers: namedWatchers(self, named, watchers), peers: [...neighbours.keys()] };
}
