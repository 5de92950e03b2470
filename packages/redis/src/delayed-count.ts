import type { DelayedCount } from '@kq/core';
import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';
import { loadLuaScript } from './lua-script';

/**
 * Above this many delayed messages only the total is counted: the breakdown reads every member (the envelope
 * included), which must stay a short script.
 */
export const DELAYED_BREAKDOWN_MAX = 10_000;

/**
 * ZCARD, and when small enough the members' target lists (`<byte length>:<list><envelope>`, as `DelayedPromoter.push`
 * writes them) counted server-side, in one atomic script so the promoter cannot move members between reads. Lua
 * strings are bytes, which is what the length prefix counts.
 */
const COUNT_DELAYED = loadLuaScript('count-delayed');

/**
 * Delayed messages in `_kq.delayed`, by queue (priority steps merged) when there are at most `breakdownMax`. The
 * cluster layout keeps one delayed set per queue (`scopes` names them; `['']` is the one set of Kombu's layout), each
 * counted in its own slot.
 */
export async function countDelayed(
  commands: RedisClient,
  layout: KeyLayout,
  breakdownMax = DELAYED_BREAKDOWN_MAX,
  scopes: readonly string[] = [''],
): Promise<DelayedCount> {
  let total = 0;
  let breakdown = true;
  const byQueue: Record<string, number> = {};
  for (const scope of scopes) {
    const reply = (await COUNT_DELAYED.run(commands, [layout.scopedKey('delayed', scope)], [breakdownMax])) as Array<number | string>;
    const count = Number(reply[0]);
    total += count;
    if (count > breakdownMax) breakdown = false;
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const { queue } = layout.parseListKey(layout.prefix + String(reply[i]));
      byQueue[queue] = (byQueue[queue] ?? 0) + Number(reply[i + 1]);
    }
  }
  return breakdown && total <= breakdownMax ? { total, byQueue } : { total };
}
