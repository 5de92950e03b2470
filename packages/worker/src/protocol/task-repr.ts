import { pythonRepr, pythonTupleRepr } from '@kq/core';

/** Celery's `argsrepr_maxsize`/`kwargsrepr_maxsize`: the longest `argsrepr`/`kwargsrepr` it writes. */
export const REPR_MAX_LENGTH = 1024;

/** Cuts a repr to at most `maxLength` characters, marking the cut with `...` as Celery's `saferepr` does. */
export function truncateRepr(text: string, maxLength = REPR_MAX_LENGTH): string {
  return text.length > maxLength ? `${text.slice(0, Math.max(0, maxLength - 3))}...` : text;
}

/** The `argsrepr` header Celery writes by default: `repr(tuple(args))`, e.g. `(2, 2)` or `('x',)`, truncated. */
export function defaultArgsrepr(args: readonly unknown[]): string {
  const clipped = clipForRepr(args, { budget: CLIP_BUDGET });
  return pythonTupleRepr(Array.isArray(clipped) ? clipped : args, REPR_MAX_LENGTH);
}

/** The `kwargsrepr` header Celery writes by default: `repr(kwargs)`, e.g. `{'x': 1}`, truncated. */
export function defaultKwargsrepr(kwargs: Readonly<Record<string, unknown>>): string {
  return pythonRepr(clipForRepr(kwargs, { budget: CLIP_BUDGET }), REPR_MAX_LENGTH);
}

// Margin over the visible length so that whatever clipping changes lies past the cut.
const CLIP_BUDGET = REPR_MAX_LENGTH + 16;

interface ClipState {
  /** Output characters still to account for; every visited value writes at least as many as it is charged. */
  budget: number;
}

/**
 * A copy of `value` with everything that could not appear in the first `REPR_MAX_LENGTH` characters of its repr
 * removed, so a 1 MB argument costs microseconds instead of a full repr that is then thrown away. Values are visited
 * in output order and charged no more than the characters they produce; once the budget is spent the output is
 * already longer than the limit, so what is dropped after that point is never shown. Strings keep their quote style.
 */
function clipForRepr(value: unknown, state: ClipState): unknown {
  state.budget -= 1;
  if (typeof value === 'string') {
    if (value.length <= state.budget) {
      state.budget -= value.length;
      return value;
    }
    const kept = Math.max(0, state.budget);
    state.budget = 0;
    return value.slice(0, kept) + quoteMarker(value);
  }
  if (Buffer.isBuffer(value)) {
    if (value.length <= state.budget) {
      state.budget -= value.length;
      return value;
    }
    const kept = Math.max(0, state.budget);
    state.budget = 0;
    return value.subarray(0, kept);
  }
  if (typeof value !== 'object' || value === null || value instanceof Date) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      if (state.budget <= 0) break;
      out.push(clipForRepr(item, state));
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (state.budget <= 0) break;
    state.budget -= key.length + 2;
    Object.defineProperty(out, key, {
      value: clipForRepr((value as Record<string, unknown>)[key], state),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * Python picks double quotes for a string that has a `'` and no `"`. A clipped string gets one character (past the cut)
 * that makes the same choice as the whole string.
 */
function quoteMarker(text: string): string {
  if (text.includes('"')) return '"';
  return text.includes("'") ? "'" : '';
}
