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
  // Every message's headers pass here, and they nest two or three levels: answered without a stack of pairs.
  if (limit >= SHALLOW_LEVELS && nestsWithin(value, SHALLOW_LEVELS)) return false;
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

/** How deep the allocation-free first look goes (its recursion is bounded by it, so it cannot overflow either). */
const SHALLOW_LEVELS = 4;

/** True when no list or object in `node` sits `levels` or more levels below it (`node` itself is level 0). */
function nestsWithin(node: unknown, levels: number): boolean {
  if (typeof node !== 'object' || node === null || Buffer.isBuffer(node) || node instanceof Date) return true;
  if (levels === 0) return false;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) if (!nestsWithin(node[i], levels - 1)) return false;
    return true;
  }
  const record = node as Record<string, unknown>;
  for (const key in record) if (Object.hasOwn(record, key) && !nestsWithin(record[key], levels - 1)) return false;
  return true;
}
