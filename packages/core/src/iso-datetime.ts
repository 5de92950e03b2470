/**
 * ISO 8601 datetimes as Python writes and reads them, for every place kq meets one (task `eta`/`expires`, the JSON
 * codec's `datetime` markers, result dates). Callers wrap a failure in their own error (InvalidTaskError,
 * DecodeError, EncodeError), so these functions return it instead of throwing.
 */

/**
 * Python's `datetime.isoformat()` of an aware UTC datetime; undefined for a Date Python cannot hold (NaN, years outside
 * 1..9999). A Date has milliseconds: `microseconds` (0-999) gives back the rest of a time read from Python's text.
 */
export function formatIsoDatetime(date: Date, microseconds = 0): string | undefined {
  if (Number.isNaN(date.getTime())) return undefined;
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) return undefined;
  // Python writes six fraction digits whenever microseconds are nonzero.
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ for years 0..9999
  const seconds = iso.slice(0, 19);
  const micros = Math.trunc(microseconds) % 1000;
  return date.getUTCMilliseconds() === 0 && micros === 0 ? `${seconds}+00:00` : `${seconds}.${iso.slice(20, 23)}${String(micros).padStart(3, '0')}+00:00`;
}

/** The microseconds past the millisecond (0-999) in a Python datetime's text, which a Date drops. */
export function subMillisecondMicros(text: string): number {
  const fraction = /T\d\d:\d\d(?::\d\d)?[.,](\d+)/.exec(text)?.[1] ?? '';
  return Number(fraction.padEnd(6, '0').slice(3, 6));
}

/** A parsed datetime, or why the text is not one (a phrase to put after the text in an error message). */
export type IsoDatetimeParse = { date: Date } | { invalid: string };

// date [sep time[.fraction]] [Z | ±HH[[:]MM[[:]SS[.ffffff]]]] — what Celery 5.2's parser and Python's
// `datetime.fromisoformat` accept in practice (Celery 5.2 also writes `Z`; naive values come from old clients).
const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2})(?::?(\d{2})(?:\.(\d{1,6}))?)?)?)?)?$/;

/**
 * Parses an ISO 8601 datetime: with an offset (`+00:00`, `-05:30`, `+0100`), with `Z`, or naive (no offset), which
 * `naiveToUtc` turns from wall-clock milliseconds into UTC ones (default: read as UTC). Fractions of any length are
 * accepted; a Date keeps milliseconds (truncated). Out-of-range fields are invalid.
 */
export function parseIsoDatetime(text: string, naiveToUtc: (wallClockMs: number) => number = (ms) => ms): IsoDatetimeParse {
  const match = typeof text === 'string' ? ISO_DATETIME.exec(text) : null;
  if (match === null) return { invalid: 'expected an ISO 8601 datetime such as "2026-11-21T13:12:05.748339+00:00"' };
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, oh, om, os, ofraction] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h ?? 0);
  const minute = Number(mi ?? 0);
  const second = Number(s ?? 0);
  if (year < 1) return { invalid: 'year 0 does not exist in Python datetimes (years 1 to 9999)' };
  if (month < 1 || month > 12) return { invalid: `month ${month} is out of range` };
  if (day < 1 || day > daysInMonth(year, month)) return { invalid: `day ${day} is out of range for that month` };
  if (hour > 23 || minute > 59 || second > 59) return { invalid: 'the time of day is out of range' };
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));

  const wallClock = new Date(0);
  // setUTCFullYear, unlike Date.UTC, keeps years 0..99 as they are.
  wallClock.setUTCFullYear(year, month - 1, day);
  wallClock.setUTCHours(hour, minute, second, millis);
  const localMs = wallClock.getTime();

  if (zulu !== undefined) return { date: new Date(localMs) };
  if (sign !== undefined) {
    const offsetHours = Number(oh);
    const offsetMinutes = Number(om ?? 0);
    const offsetSeconds = Number(os ?? 0);
    if (offsetHours > 23 || offsetMinutes > 59 || offsetSeconds > 59) return { invalid: 'the UTC offset is out of range' };
    const offsetMs =
      (offsetHours * 3_600_000 + offsetMinutes * 60_000 + offsetSeconds * 1000 + Number((ofraction ?? '').padEnd(6, '0')) / 1000) *
      (sign === '-' ? -1 : 1);
    return { date: new Date(localMs - Math.trunc(offsetMs)) };
  }
  return { date: new Date(naiveToUtc(localMs)) };
}

function daysInMonth(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
}
