// ISO 8601 datetimes as Celery writes and reads them, and naive times in IANA zones.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InvalidTaskError } from '../src/errors/errors';
import { subMillisecondMicros } from '@kq/core';
import { assertTimeZone, decodeTaskMessage, formatIsoDate, localTimeToUtcMs, parseIsoDate, zoneOffsetMs } from '../src/protocol/index';

const at = (iso: string): Date => new Date(iso);

describe('formatIsoDate', () => {
  it('writes Python isoformat: +00:00, six fraction digits only when there is a fraction', () => {
    expect(formatIsoDate(at('2026-11-21T13:12:05.748Z'))).toBe('2026-11-21T13:12:05.748000+00:00');
    expect(formatIsoDate(at('2026-11-21T13:12:05Z'))).toBe('2026-11-21T13:12:05+00:00');
    expect(formatIsoDate(at('2026-11-21T13:12:05.001Z'))).toBe('2026-11-21T13:12:05.001000+00:00');
    expect(formatIsoDate(at('0001-01-01T00:00:00Z'))).toBe('0001-01-01T00:00:00+00:00');
    expect(formatIsoDate(at('0099-03-04T05:06:07Z'))).toBe('0099-03-04T05:06:07+00:00');
  });

  it("gives back the microseconds a Date drops, as read from the sender's text (inspect scheduled's eta)", () => {
    const text = '2026-11-27T09:42:13.841025';
    const eta = parseIsoDate(text);
    expect(formatIsoDate(eta)).toBe('2026-11-27T09:42:13.841000+00:00');
    expect(formatIsoDate(eta, subMillisecondMicros(text))).toBe('2026-11-27T09:42:13.841025+00:00');
    expect(formatIsoDate(parseIsoDate('2026-11-27T09:42:13.000007+00:00'), subMillisecondMicros('2026-11-27T09:42:13.000007+00:00'))).toBe('2026-11-27T09:42:13.000007+00:00');
    expect(subMillisecondMicros('2026-11-27T09:42:13+00:00')).toBe(0);
    expect(subMillisecondMicros('2026-11-27T09:42:13.5')).toBe(0);
    const message = decodeTaskMessage({
      body: Buffer.from(JSON.stringify([[], {}, { callbacks: null, errbacks: null, chain: null, chord: null }])),
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { lang: 'py', task: 'add', id: 'eta-micro', eta: text, expires: null, retries: 0, timelimit: [null, null], root_id: 'eta-micro', parent_id: null, group: null },
      properties: {},
    });
    expect(message.etaMicroseconds).toBe(25);
  });

  it('refuses dates Python cannot hold', () => {
    expect(() => formatIsoDate(new Date(Number.NaN))).toThrow(InvalidTaskError);
    expect(() => formatIsoDate(at('+010000-01-01T00:00:00Z'))).toThrow(/years 1 to 9999/);
    expect(() => formatIsoDate(at('0000-12-31T23:59:59Z'))).toThrow(/years 1 to 9999/);
  });
});

describe('parseIsoDate', () => {
  it.each([
    ['2026-11-21T13:12:05.748339+00:00', '2026-11-21T13:12:05.748Z'],
    ['2026-11-21T13:12:05+00:00', '2026-11-21T13:12:05.000Z'],
    ['2020-01-01T00:00:00Z', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T00:00:00z', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T00:00:00', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01 00:00:00', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T05:30:00+05:30', '2020-01-01T00:00:00.000Z'],
    ['2019-12-31T19:00:00-05:00', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T01:00:00+0100', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T01:00:00+01', '2020-01-01T00:00:00.000Z'],
    ['2020-01-01T00:00:00.5Z', '2020-01-01T00:00:00.500Z'],
    ['2020-01-01T00:00:00.123456789Z', '2020-01-01T00:00:00.123Z'],
    ['2020-01-01T00:00:00,25Z', '2020-01-01T00:00:00.250Z'],
    ['2020-01-01T12:34', '2020-01-01T12:34:00.000Z'],
    ['2020-01-01', '2020-01-01T00:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['0001-01-01T00:00:00+00:00', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999999+00:00', '9999-12-31T23:59:59.999Z'],
  ])('parses %s', (text, expected) => {
    expect(parseIsoDate(text).toISOString()).toBe(new Date(expected).toISOString());
  });

  it.each([
    'garbage',
    '',
    '2020-13-01T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2020-01-01T24:00:00Z',
    '2020-01-01T00:60:00Z',
    '2020-01-01T00:00:60Z',
    '0000-01-01T00:00:00Z',
    '2020-01-01T00:00:00+25:00',
    '2020-01-01T00:00:00 UTC',
    '2020-01-01T00:00:00+00:00 ',
    '20200101T000000Z',
    '1577836800',
  ])('rejects %j with InvalidTaskError naming the text', (text) => {
    expect(() => parseIsoDate(text)).toThrow(InvalidTaskError);
    expect(() => parseIsoDate(text)).toThrow(JSON.stringify(text));
  });

  it('round-trips formatIsoDate for every Python-representable instant (ms precision)', () => {
    fc.assert(
      fc.property(fc.date({ min: at('0001-01-01T00:00:00Z'), max: at('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (date) => {
        expect(parseIsoDate(formatIsoDate(date)).getTime()).toBe(date.getTime());
        expect(parseIsoDate(date.toISOString()).getTime()).toBe(date.getTime());
      }),
      { numRuns: 500 },
    );
  });

  it('reads naive times in Europe/Berlin: +01:00 in winter, +02:00 in summer', () => {
    expect(parseIsoDate('2026-01-15T12:00:00', 'Europe/Berlin')).toEqual(at('2026-01-15T11:00:00Z'));
    expect(parseIsoDate('2026-07-15T12:00:00', 'Europe/Berlin')).toEqual(at('2026-07-15T10:00:00Z'));
    expect(parseIsoDate('2026-07-15T12:00:00.250', 'Europe/Berlin')).toEqual(at('2026-07-15T10:00:00.250Z'));
    // An explicit offset wins over the zone.
    expect(parseIsoDate('2026-07-15T12:00:00+00:00', 'Europe/Berlin')).toEqual(at('2026-07-15T12:00:00Z'));
    expect(parseIsoDate('2026-07-15T12:00:00', 'America/New_York')).toEqual(at('2026-07-15T16:00:00Z'));
    expect(parseIsoDate('2026-01-15T12:00:00', 'Asia/Kolkata')).toEqual(at('2026-01-15T06:30:00Z'));
  });

  it('resolves DST edges: ambiguous → earlier instant, skipped → shifted forward', () => {
    // 2026-10-25 03:00 CEST → 02:00 CET: 02:30 happens twice; the first (CEST, +02:00) wins.
    expect(parseIsoDate('2026-10-25T02:30:00', 'Europe/Berlin')).toEqual(at('2026-10-25T00:30:00Z'));
    // 2026-03-29 02:00 CET → 03:00 CEST: 02:30 does not exist; it is read as 03:30 CEST.
    expect(parseIsoDate('2026-03-29T02:30:00', 'Europe/Berlin')).toEqual(at('2026-03-29T01:30:00Z'));
    expect(parseIsoDate('2026-03-29T03:00:00', 'Europe/Berlin')).toEqual(at('2026-03-29T01:00:00Z'));
    expect(parseIsoDate('2026-03-29T01:59:59', 'Europe/Berlin')).toEqual(at('2026-03-29T00:59:59Z'));
  });

  it('agrees with Intl for naive times in several zones (wall time → instant → same wall time)', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Apia'];
    fc.assert(
      fc.property(fc.constantFrom(...zones), fc.date({ min: at('1990-01-01T00:00:00Z'), max: at('2040-01-01T00:00:00Z'), noInvalidDate: true }), (zone, instant) => {
        // Format the instant as wall-clock time in the zone, then parse it back as naive.
        const wall = new Date(instant.getTime() + zoneOffsetMs(zone, instant.getTime()));
        const naive = wall.toISOString().slice(0, 23);
        const back = parseIsoDate(naive, zone);
        // Equal, except for wall times that occur twice, where the earlier instant is chosen.
        if (back.getTime() !== instant.getTime()) {
          expect(back.getTime()).toBeLessThan(instant.getTime());
          expect(new Date(back.getTime() + zoneOffsetMs(zone, back.getTime())).toISOString().slice(0, 23)).toBe(naive);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('rejects unknown zones with a reason, and assertTimeZone checks configuration up front', () => {
    expect(() => parseIsoDate('2026-01-01T00:00:00', 'Nowhere/Nothing')).toThrow(/Unknown time zone "Nowhere\/Nothing"/);
    expect(parseIsoDate('2026-01-01T00:00:00Z', 'Nowhere/Nothing')).toEqual(at('2026-01-01T00:00:00Z'));
    expect(() => assertTimeZone('Nowhere/Nothing')).toThrow(InvalidTaskError);
    expect(() => assertTimeZone('Europe/Berlin')).not.toThrow();
    expect(() => assertTimeZone('UTC')).not.toThrow();
    expect(localTimeToUtcMs('UTC', 1234)).toBe(1234);
  });
});

