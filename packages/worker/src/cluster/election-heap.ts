import { compareCodePoints } from './code-point-order';

/** One election request as Gossip records it: `(clock, "hostname.pid", topic, action)`. */
export type ElectionEntry = [clock: number, id: string, topic: string, action: unknown];

/**
 * Python's `heapq.heappush` on election entries. Celery picks the leader with `LamportClock.sort_heap(heap)`, which
 * looks at `heap[0]` and `heap[1]` of the heap *array* (not a sorted list); building the array exactly as Python
 * does makes kq and Python workers elect the same leader.
 */
export function heapPush(heap: ElectionEntry[], entry: ElectionEntry): void {
  heap.push(entry);
  let pos = heap.length - 1;
  while (pos > 0) {
    const parentPos = (pos - 1) >> 1;
    const parent = heap[parentPos] as ElectionEntry;
    if (compareEntries(entry, parent) < 0) {
      heap[pos] = parent;
      pos = parentPos;
      continue;
    }
    break;
  }
  heap[pos] = entry;
}

/** Python's tuple ordering for `(clock, id, topic, action)`. */
export function compareEntries(a: ElectionEntry, b: ElectionEntry): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  for (const i of [1, 2] as const) {
    if (a[i] !== b[i]) return compareCodePoints(a[i], b[i]);
  }
  const x = a[3] === null || a[3] === undefined ? '' : JSON.stringify(a[3]);
  const y = b[3] === null || b[3] === undefined ? '' : JSON.stringify(b[3]);
  return x === y ? 0 : x < y ? -1 : 1;
}
