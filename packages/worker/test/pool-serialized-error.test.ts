import { jsonCodec } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContentDisallowed, SecurityError } from '@kq/core';
import { ChordError, Ignore, ImproperlyConfigured, NotRegistered, Reject, Retry, SoftTimeLimitExceeded, TaskFailedError, TimeLimitExceeded, WorkerLostError } from '../src/errors/errors';
import { PythonException } from '../src/errors/python-exception';
import { restoreBuffers } from '../src/pool/restore-buffers';
import { deserializeError, serializeError, type SerializedError } from '../src/pool/serialized-error';

// Errors crossing between a pool child and the worker: by structured clone (threads) or JSON (processes).
const crossings = {
  'structured clone': (data: SerializedError): SerializedError => structuredClone(data),
  json: (data: SerializedError): SerializedError => jsonCodec.decode(jsonCodec.encode(data)) as SerializedError,
};

describe.each(Object.entries(crossings))('errors crossing by %s', (_name, cross) => {
  const roundTrip = (error: unknown): Error => deserializeError(cross(serializeError(error)));

  it('keeps Retry with its cause and time', () => {
    const when = new Date('2030-01-02T03:04:05.678Z');
    const back = roundTrip(new Retry('Retry in 5s: RangeError: flaky', new RangeError('flaky'), when));
    expect(back).toBeInstanceOf(Retry);
    const retry = back as Retry;
    expect(retry.message).toBe('Retry in 5s: RangeError: flaky');
    expect(retry.when?.toISOString()).toBe(when.toISOString());
    expect(retry.exc).toBeInstanceOf(RangeError);
    expect((retry.exc as Error).message).toBe('flaky');
  });

  it('keeps Reject, Ignore, NotRegistered and the time-limit errors as their classes', () => {
    const reject = roundTrip(new Reject('not now', true)) as Reject;
    expect(reject).toBeInstanceOf(Reject);
    expect([reject.reason, reject.requeue]).toEqual(['not now', true]);
    expect(roundTrip(new Ignore('skip'))).toBeInstanceOf(Ignore);
    expect((roundTrip(new NotRegistered('proj.missing')) as NotRegistered).taskName).toBe('proj.missing');
    for (const errorClass of [SoftTimeLimitExceeded, TimeLimitExceeded, WorkerLostError]) {
      const back = roundTrip(new errorClass('limit'));
      expect(back).toBeInstanceOf(errorClass);
      expect(back.name).toBe(errorClass.name);
    }
    const failed = roundTrip(new TaskFailedError('id-1', 'KeyError', ['k'], 'builtins', 'Traceback...')) as TaskFailedError;
    expect([failed.taskId, failed.excType, failed.excMessage, failed.excModule]).toEqual(['id-1', 'KeyError', ['k'], 'builtins']);
  });

  it('keeps every kq error that is rebuilt from its message as its class, as results do (one registry)', () => {
    for (const errorClass of [ChordError, ImproperlyConfigured, SecurityError]) {
      const back = roundTrip(new errorClass('went wrong'));
      expect(back).toBeInstanceOf(errorClass);
      expect(back.message).toBe('went wrong');
    }
    // One that needs more than a message keeps its name, message and plain fields on an Error.
    const refused = roundTrip(new ContentDisallowed('application/x-python-serialize', ['json']));
    expect([refused.name, (refused as unknown as { contentType: string }).contentType]).toEqual(['ContentDisallowed', 'application/x-python-serialize']);
  });

  it('recognises kq errors by name when they come from another build of the package', () => {
    const foreign = Object.assign(new Error('Retry in 1s'), { name: 'Retry', exc: new TypeError('cause'), when: new Date(0) });
    const back = roundTrip(foreign);
    expect(back).toBeInstanceOf(Retry);
    expect((back as Retry).exc).toBeInstanceOf(TypeError);
    const rejected = roundTrip(Object.assign(new Error('x'), { name: 'Reject', reason: 'x', requeue: true })) as Reject;
    expect(rejected).toBeInstanceOf(Reject);
    expect(rejected.requeue).toBe(true);
  });

  it('keeps built-in classes, and the name, message, stack, cause and plain properties of others', () => {
    class QuotaError extends RangeError {
      constructor(readonly limit: number) {
        super(`over quota ${limit}`);
        this.name = 'QuotaError';
      }
    }
    const back = roundTrip(new QuotaError(5));
    expect(back).toBeInstanceOf(RangeError);
    expect(back.name).toBe('QuotaError');
    expect((back as unknown as { limit: number }).limit).toBe(5);
    const original = Object.assign(new Error('disk gone', { cause: new TypeError('root cause') }), { name: 'DiskError', code: 'ENOSPC', errno: -28 });
    const other = roundTrip(original);
    expect(other.name).toBe('DiskError');
    expect(other.message).toBe('disk gone');
    expect(other.stack).toBe(original.stack);
    expect(other.cause).toBeInstanceOf(TypeError);
    expect(other).toMatchObject({ code: 'ENOSPC', errno: -28 });
  });

  it('keeps a PythonException with its module, type and arguments', () => {
    const back = roundTrip(new PythonException('billing.errors', 'PaymentDeclined', ['card expired', 402]));
    expect(back).toBeInstanceOf(PythonException);
    const python = back as PythonException;
    expect([python.pythonModule, python.pythonType, python.pythonArgs]).toEqual(['billing.errors', 'PaymentDeclined', ['card expired', 402]]);
  });

  it('gives thrown non-errors back as they were', () => {
    expect(roundTrip('a string')).toBe('a string');
    expect(roundTrip({ code: 7 })).toEqual({ code: 7 });
  });

  it('round-trips any name and message', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (name, message) => {
        const error = new Error(message);
        error.name = name;
        const back = roundTrip(error);
        expect(back.message).toBe(message);
        expect(back.name).toBe(name);
      }),
    );
  });
});

describe('restoreBuffers', () => {
  it('turns the Uint8Arrays a worker thread receives back into Buffers, in place, cycles included', () => {
    const cyclic: Record<string, unknown> = { bytes: new Uint8Array([1, 2, 3]), list: [new Uint8Array([4])], map: new Map([['k', new Uint8Array([5])]]) };
    cyclic['self'] = cyclic;
    const cloned = structuredClone(cyclic);
    restoreBuffers(cloned);
    expect(Buffer.isBuffer(cloned['bytes'])).toBe(true);
    expect(Buffer.isBuffer((cloned['list'] as unknown[])[0])).toBe(true);
    expect(Buffer.isBuffer((cloned['map'] as Map<string, unknown>).get('k'))).toBe(true);
    expect(cloned['self']).toBe(cloned);
    expect([...(cloned['bytes'] as Buffer)]).toEqual([1, 2, 3]);
  });
});
