import type { KqError } from '@kq/core';

type ErrorClass = abstract new (...args: never[]) => KqError;

/**
 * Awaits `operation` and asserts it failed with `expected`. Matches by class, or by name when the transport was
 * built against another copy of `@kq/core` (a bundled transport), so the failure message stays useful.
 */
export async function expectError(operation: Promise<unknown> | (() => Promise<unknown>), expected: ErrorClass, what: string): Promise<unknown> {
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    const value = await (typeof operation === 'function' ? operation() : operation);
    outcome = { ok: true, value };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (outcome.ok) {
    throw new Error(`${what}: expected it to fail with ${expected.name}, but it succeeded (${preview(outcome.value)}).`);
  }
  const { error } = outcome;
  if (error instanceof expected) return error;
  if (error instanceof Error && error.name === expected.name) return error;
  const seen = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  throw new Error(`${what}: expected ${expected.name}, got ${seen}`, { cause: error });
}

function preview(value: unknown): string {
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 120 ? `${text.slice(0, 120)}…` : text;
  } catch {
    return String(value);
  }
}
