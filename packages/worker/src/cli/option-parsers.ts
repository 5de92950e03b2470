import { InvalidArgumentError } from 'commander';

/**
 * Turn a flag's text into its value for commander; a bad value is a usage error (exit 2) that names the flag's
 * expected form, never a stack trace.
 */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number.');
  return n;
}

export function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number of seconds (0 or more).');
  return n;
}

export function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of seconds.');
  return n;
}

export function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('expected a port number (0 to 65535).');
  return n;
}

/** `a,b , c` → `['a', 'b', 'c']`. */
export function commaList(value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
}

export function jsonArray(value: string): unknown[] {
  const parsed = parseJson(value);
  if (!Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON array, e.g. \'[2, 2]\'.');
  return parsed;
}

export function jsonObject(value: string): Record<string, unknown> {
  const parsed = parseJson(value);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON object, e.g. \'{"x": 1}\'.');
  return parsed as Record<string, unknown>;
}

/** An ISO 8601 time (`2026-01-01T10:00:00Z`); a time without a zone is UTC, as Celery reads `eta`. */
export function isoTime(value: string): Date {
  const withZone = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`;
  const date = new Date(withZone);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('expected an ISO 8601 time, e.g. 2026-01-01T10:00:00Z.');
  return date;
}

/** Seconds from now, or an ISO 8601 time (Celery's `--expires`). */
export function secondsOrTime(value: string): number | Date {
  return /^\d+(\.\d+)?$/.test(value) ? Number(value) : isoTime(value);
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new InvalidArgumentError(`not valid JSON: ${value}`);
  }
}
