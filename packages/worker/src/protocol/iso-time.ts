import { InvalidTaskError } from '../errors';
import { localTimeToUtcMs } from './time-zone-offset';

/**
 * Python's `datetime.isoformat()` of an aware UTC datetime, which is how Celery writes `eta`/`expires`
 * (docs/wire.md#headers): `2026-11-21T13:12:05+00:00`, or `2026-11-21T13:12:05.748000+00:00` when there is a fraction
 * (Python writes six digits whenever microseconds are nonzero; a Date has milliseconds, so the last three are zeros).
 */
export function formatIsoDate(date: Date): string {
  const time = date.getTime();
  if (Number.isNaN(time)) throw new InvalidTaskError('Cannot format an invalid Date (NaN) as an ISO 8601 datetime.');
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) {
    throw new InvalidTaskError(
      `Cannot format ${date.toISOString()} for Celery: Python datetimes only cover the years 1 to 9999.`,
    );
  }
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ for years 0..9999
  const seconds = iso.slice(0, 19);
  return date.getUTCMilliseconds() === 0 ? `${seconds}+00:00` : `${seconds}.${iso.slice(20, 23)}000+00:00`;
}

// date [sep time[.fraction]] [Z | ±HH[[:]MM[[:]SS[.ffffff]]]] — what Celery 5.2's parser and Python's
// `datetime.fromisoformat` accept in practice (Celery 5.2 also writes `Z`; naive values come from old clients).
const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2})(?::?(\d{2})(?:\.(\d{1,6}))?)?)?)?)?$/;

/**
 * Parses an ISO 8601 datetime as Celery peers write it: with an offset (`+00:00`, `-05:30`, `+0100`), with `Z`, or
 * naive (no offset), which is read as wall-clock time in `timezone` (an IANA name, default UTC; DST-ambiguous times
 * take the earlier instant). Fractions of any length are accepted; a Date keeps milliseconds (truncated).
 * Anything else, including out-of-range fields, is an `InvalidTaskError` naming the text.
 */
export function parseIsoDate(text: string, timezone = 'UTC'): Date {
  const match = typeof text === 'string' ? ISO_DATETIME.exec(text) : null;
  if (match === null) throw invalid(text, 'expected an ISO 8601 datetime such as "2026-11-21T13:12:05.748339+00:00"');
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, oh, om, os, ofraction] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h ?? 0);
  const minute = Number(mi ?? 0);
  const second = Number(s ?? 0);
  if (year < 1) throw invalid(text, 'year 0 does not exist in Python datetimes (years 1 to 9999)');
  if (month < 1 || month > 12) throw invalid(text, `month ${month} is out of range`);
  if (day < 1 || day > daysInMonth(year, month)) throw invalid(text, `day ${day} is out of range for that month`);
  if (hour > 23 || minute > 59 || second > 59) throw invalid(text, 'the time of day is out of range');
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));

  const wallClock = new Date(0);
  // setUTCFullYear, unlike Date.UTC, keeps years 0..99 as they are.
  wallClock.setUTCFullYear(year, month - 1, day);
  wallClock.setUTCHours(hour, minute, second, millis);
  const localMs = wallClock.getTime();

  if (zulu !== undefined) return new Date(localMs);
  if (sign !== undefined) {
    const offsetHours = Number(oh);
    const offsetMinutes = Number(om ?? 0);
    const offsetSeconds = Number(os ?? 0);
    if (offsetHours > 23 || offsetMinutes > 59 || offsetSeconds > 59) throw invalid(text, 'the UTC offset is out of range');
    const offsetMs =
      (offsetHours * 3_600_000 + offsetMinutes * 60_000 + offsetSeconds * 1000 + Number((ofraction ?? '').padEnd(6, '0')) / 1000) *
      (sign === '-' ? -1 : 1);
    return new Date(localMs - Math.trunc(offsetMs));
  }
  return new Date(localTimeToUtcMs(timezone, localMs));
}

function daysInMonth(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
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
