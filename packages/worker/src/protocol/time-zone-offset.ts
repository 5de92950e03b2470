import { InvalidTaskError } from '../errors/errors';

const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** True for the names that mean UTC without asking Intl (the common case, and the default). */
function isUtc(zone: string): boolean {
  const upper = zone.toUpperCase();
  return upper === 'UTC' || upper === 'ETC/UTC' || upper === 'GMT';
}

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        era: 'short',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch (error) {
      throw new InvalidTaskError(
        `Unknown time zone ${JSON.stringify(zone)}: naive datetimes cannot be interpreted in it. ` +
          `Use an IANA zone name such as "UTC" or "Europe/Berlin" (the worker's \`timezone\` option).`,
        { cause: error },
      );
    }
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** Throws `InvalidTaskError` unless `zone` is a time zone this runtime knows; call it when reading configuration. */
export function assertTimeZone(zone: string): void {
  if (!isUtc(zone)) formatterFor(zone);
}

/** The offset of `zone` from UTC at the instant `utcMs`, in milliseconds (positive east of Greenwich). */
export function zoneOffsetMs(zone: string, utcMs: number): number {
  if (isUtc(zone)) return 0;
  const fields: Record<string, string> = {};
  for (const part of formatterFor(zone).formatToParts(utcMs)) fields[part.type] = part.value;
  const yearOfEra = Number(fields.year);
  const year = fields.era === 'BC' || fields.era === 'B' ? 1 - yearOfEra : yearOfEra;
  const local = new Date(0);
  // setUTCFullYear, unlike Date.UTC, keeps years 0..99 as they are.
  local.setUTCFullYear(year, Number(fields.month) - 1, Number(fields.day));
  local.setUTCHours(Number(fields.hour), Number(fields.minute), Number(fields.second), 0);
  return local.getTime() - Math.floor(utcMs / 1000) * 1000;
}

/**
 * The instant at which the wall-clock time `localMs` (its fields read as if it were UTC) occurs in `zone`.
 * Ambiguous times (a clock set back) take the earlier instant, as Celery's `make_aware` does; times skipped by a
 * clock set forward move forward by the gap (`02:30` on a spring-forward night is `03:30` summer time).
 */
export function localTimeToUtcMs(zone: string, localMs: number): number {
  if (isUtc(zone)) return localMs;
  // The offsets in force a day either side cover any single transition around this wall time.
  const before = zoneOffsetMs(zone, localMs - DAY_MS);
  const after = zoneOffsetMs(zone, localMs + DAY_MS);
  const candidates = new Set([before, after, zoneOffsetMs(zone, localMs)]);
  let best: number | undefined;
  for (const offset of candidates) {
    const instant = localMs - offset;
    if (zoneOffsetMs(zone, instant) === offset && (best === undefined || instant < best)) best = instant;
  }
  if (best !== undefined) return best;
  // In a gap: read the wall time with the offset from before the transition, which lands after it.
  return localMs - before;
}

