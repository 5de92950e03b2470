/**
 * How deep a received task message may nest lists and objects. Python's json stops at its recursion limit (1000
 * frames), so a message from any Celery client nests less; deeper is hostile or broken.
 */
export const MAX_NESTING_DEPTH = 1000;

/**
 * True when `value` nests lists/objects more than `limit` levels deep. Iterative, so the check itself cannot overflow
 * the stack, and it stops at the first path past the limit.
 */
export function nestingDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== 'object' || node === null || Buffer.isBuffer(node) || node instanceof Date) continue;
    if (depth >= limit) return true;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
