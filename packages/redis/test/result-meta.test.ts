import fc from 'fast-check';
import { jsonCodec, type ResultMeta } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { decodeResultMeta, encodeResultMeta } from '../src/result-meta';
import { parseDocument, writeDocument } from '@kq/core';

// encodeResultMeta re-writes the codec's compact JSON with pyJson(JSON.parse(...)), decodeResultMeta skips the codec
// when there is no marker: both must give what the document re-writer and the codec give.

// Python datetimes cover years 1 to 9999 only (the codec refuses the rest).
const date = fc.date({ min: new Date(Date.UTC(1, 0, 1)), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true });
const resultValue = fc.oneof(fc.jsonValue(), date, fc.dictionary(fc.string(), fc.oneof(fc.jsonValue(), date)));

/** The meta with its fields in the order encodeResultMeta writes them (extras are `x_`-named, after date_done). */
function metaWith(result: unknown, extra: Record<string, unknown>): ResultMeta {
  const extras = Object.fromEntries(Object.entries(extra).map(([key, value]) => [`x_${key}`, value]));
  return {
    status: 'SUCCESS',
    result,
    traceback: null,
    children: [],
    date_done: '2026-01-02T03:04:05.123456+00:00',
    ...extras,
    task_id: 'c0ffee00-0000-4000-8000-000000000000',
  } as ResultMeta;
}

describe('result meta text', () => {
  it('is the codec’s JSON re-written the Python way, for any result (fast-check)', () => {
    fc.assert(
      fc.property(resultValue, fc.dictionary(fc.string({ minLength: 1 }), fc.jsonValue(), { maxKeys: 3 }), (result, extra) => {
        const meta = metaWith(result, extra);
        const text = encodeResultMeta(meta);
        // What the encoder wrote before: the codec's JSON re-spaced through the document re-writer.
        expect(text).toBe(writeDocument(parseDocument(jsonCodec.encode(meta).toString('utf8'))));
        expect(decodeResultMeta(text, meta.task_id)).toEqual(jsonCodec.decode(Buffer.from(text, 'utf8')));
      }),
      { numRuns: 300 },
    );
  });

  it('reads markers (dates, bytes) through the codec', () => {
    const text = encodeResultMeta(metaWith({ at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), raw: Buffer.from([0xff, 0]) }, {}));
    const meta = decodeResultMeta(text, 'x');
    expect(meta.result).toEqual({ at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), raw: Buffer.from([0xff, 0]) });
  });
});
