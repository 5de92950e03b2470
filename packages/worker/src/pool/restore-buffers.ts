/**
 * Structured clone (how values cross to and from a worker thread) turns a Buffer into a plain Uint8Array. Tasks
 * and callers written for the async pool expect Buffers, as the JSON codec gives them: this turns every Uint8Array
 * in `value` back into a Buffer over the same memory (no copy), in place. Cycles are fine.
 */
export function restoreBuffers(value: unknown): unknown {
  return restore(value, new Set());
}

function restore(value: unknown, seen: Set<object>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Uint8Array) return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (seen.has(value) || ArrayBuffer.isView(value) || value instanceof Date || value instanceof RegExp) return value;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = restore(value[i], seen);
  } else if (value instanceof Map) {
    for (const [key, item] of value) value.set(key, restore(item, seen));
  } else if (value instanceof Set) {
    const items = [...value];
    value.clear();
    for (const item of items) value.add(restore(item, seen));
  } else {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) record[key] = restore(record[key], seen);
  }
  return value;
}
