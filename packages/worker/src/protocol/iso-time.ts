import { formatIsoDatetime, parseIsoDatetime } from '@kq/core';
import { InvalidTaskError } from '../errors/errors';
import { localTimeToUtcMs } from './time-zone-offset';

/**
 * Python's `datetime.isoformat()` of an aware UTC datetime, which is how Celery writes `eta`/`expires`
 * (docs/wire.md#headers): `2026-11-21T13:12:05+00:00`, or `2026-11-21T13:12:05.748000+00:00` when there is a fraction
 * (Python writes six digits whenever microseconds are nonzero; a Date has milliseconds, so the last three are zeros).
 */
export function formatIsoDate(date: Date, microseconds = 0): string {
  const text = formatIsoDatetime(date, microseconds);
  if (text !== undefined) return text;
  if (Number.isNaN(date.getTime())) throw new InvalidTaskError('Cannot format an invalid Date (NaN) as an ISO 8601 datetime.');
  throw new InvalidTaskError(`Cannot format ${date.toISOString()} for Celery: Python datetimes only cover the years 1 to 9999.`);
}

/**
 * Parses an ISO 8601 datetime as Celery peers write it (see core's parseIsoDatetime); a naive one is read as
 * wall-clock time in `timezone` (an IANA name, default UTC; DST-ambiguous times take the earlier instant). Anything
 * else, including out-of-range fields, is an `InvalidTaskError` naming the text.
 */
export function parseIsoDate(text: string, timezone = 'UTC'): Date {
  const parsed = parseIsoDatetime(text, (localMs) => localTimeToUtcMs(timezone, localMs));
  if ('invalid' in parsed) throw invalid(text, parsed.invalid);
  return parsed.date;
}

function invalid(text: unknown, why: string): InvalidTaskError {
  return new InvalidTaskError(`Invalid datetime ${describe(text)}: ${why}.`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  try {
    return `${typeof value} ${JSON.stringify(value)?.slice(0, 80) ?? String(value)}`;
  } catch {
    return typeof value;
  }
}
