import { DecodeError, OperationTimeout, SecurityError } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NotRegistered, Reject, SoftTimeLimitExceeded, TaskFailedError, TaskRevokedError } from '../src/errors/errors';
import { PythonException } from '../src/index';
import { exceptionFromInfo, exceptionInfo, exceptionTraceback, formatExceptionMessage } from '../src/results/index';

class PaymentDeclined extends Error {}

describe('exceptionInfo: JS errors in Celery’s stored form', () => {
  it('maps JS built-ins to the Python built-ins that mean the same', () => {
    expect(exceptionInfo(new Error('plain'))).toEqual({ exc_type: 'Exception', exc_message: ['plain'], exc_module: 'builtins' });
    expect(exceptionInfo(new TypeError('t'))).toEqual({ exc_type: 'TypeError', exc_message: ['t'], exc_module: 'builtins' });
    expect(exceptionInfo(new RangeError('r'))).toEqual({ exc_type: 'ValueError', exc_message: ['r'], exc_module: 'builtins' });
    expect(exceptionInfo(new ReferenceError('x is not defined'))).toMatchObject({ exc_type: 'NameError', exc_module: 'builtins' });
    expect(exceptionInfo(new SyntaxError('s'))).toMatchObject({ exc_type: 'SyntaxError', exc_module: 'builtins' });
  });

  it('keeps a name that is a Python built-in exception, but never one that would stop a Python client', () => {
    const keyError = Object.assign(new Error('missing'), { name: 'KeyError' });
    expect(exceptionInfo(keyError)).toEqual({ exc_type: 'KeyError', exc_message: ['missing'], exc_module: 'builtins' });
    const timeout = Object.assign(new Error('slow'), { name: 'TimeoutError' });
    expect(exceptionInfo(timeout)).toMatchObject({ exc_type: 'TimeoutError', exc_module: 'builtins' });
    const interrupt = Object.assign(new Error('stop'), { name: 'KeyboardInterrupt' });
    expect(exceptionInfo(interrupt)).toEqual({ exc_type: 'KeyboardInterrupt', exc_message: ['stop'], exc_module: 'kq.errors' });
  });

  it('stores other JS errors under their own (class) name in kq.errors', () => {
    expect(exceptionInfo(new PaymentDeclined('card'))).toEqual({ exc_type: 'PaymentDeclined', exc_message: ['card'], exc_module: 'kq.errors' });
    const named = Object.assign(new Error('a'), { name: 'AbortError' });
    expect(exceptionInfo(named)).toMatchObject({ exc_type: 'AbortError', exc_module: 'kq.errors' });
    expect(exceptionInfo(new AggregateError([], 'many'))).toMatchObject({ exc_type: 'AggregateError', exc_module: 'kq.errors' });
  });

  it('stores a PythonException as the module, type and arguments it names', () => {
    const error = new PythonException('t.integration.tasks', 'ExpectedException', ['Task expected to fail', 2, { a: [1] }]);
    expect(exceptionInfo(error)).toEqual({
      exc_type: 'ExpectedException',
      exc_message: ['Task expected to fail', 2, { a: [1] }],
      exc_module: 't.integration.tasks',
    });
    // Its message is Python's str(exc), so logs and a kq caller read what a Python one would.
    expect(error.message).toBe("('Task expected to fail', 2, {'a': [1]})");
    expect(exceptionFromInfo(exceptionInfo(error))).toMatchObject({ name: 'ExpectedException', message: error.message });
    expect(exceptionInfo(new PythonException('builtins', 'KeyboardInterrupt'))).toEqual({ exc_type: 'KeyboardInterrupt', exc_message: [], exc_module: 'builtins' });
  });

  it('stores kq’s task errors as Celery’s and codec errors as Kombu’s', () => {
    expect(exceptionInfo(new TaskRevokedError('revoked'))).toEqual({ exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' });
    expect(exceptionInfo(new SoftTimeLimitExceeded('soft'))).toMatchObject({ exc_type: 'SoftTimeLimitExceeded', exc_module: 'celery.exceptions' });
    expect(exceptionInfo(new NotRegistered('tasks.nope'))).toEqual({ exc_type: 'NotRegistered', exc_message: ['tasks.nope'], exc_module: 'celery.exceptions' });
    expect(exceptionInfo(new DecodeError('bad body'))).toMatchObject({ exc_type: 'DecodeError', exc_module: 'kombu.exceptions' });
    expect(exceptionInfo(new OperationTimeout('late'))).toMatchObject({ exc_type: 'TimeoutError', exc_module: 'builtins' });
  });

  it("stores a refused signature as Celery's SecurityError, and reads it back as kq's", () => {
    expect(exceptionInfo(new SecurityError('Bad signature'))).toEqual({ exc_type: 'SecurityError', exc_message: ['Bad signature'], exc_module: 'celery.exceptions' });
    expect(exceptionFromInfo({ exc_type: 'SecurityError', exc_message: ['Unknown certificate'], exc_module: 'celery.exceptions' })).toBeInstanceOf(SecurityError);
  });

  it('passes a remote failure on unchanged', () => {
    const remote = new TaskFailedError('t1', 'ZeroDivisionError', ['division by zero'], 'builtins', 'Traceback...');
    expect(exceptionInfo(remote)).toEqual({ exc_type: 'ZeroDivisionError', exc_message: ['division by zero'], exc_module: 'builtins' });
  });

  it('describes thrown non-errors as Exception', () => {
    expect(exceptionInfo('boom')).toEqual({ exc_type: 'Exception', exc_message: ['boom'], exc_module: 'builtins' });
    expect(exceptionInfo({ code: 7 })).toEqual({ exc_type: 'Exception', exc_message: ['{"code":7}'], exc_module: 'builtins' });
    expect(exceptionInfo(undefined)).toEqual({ exc_type: 'Exception', exc_message: ['undefined'], exc_module: 'builtins' });
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(exceptionInfo(cyclic).exc_message).toEqual(['[object Object]']);
  });
});

describe('exceptionTraceback', () => {
  it('is the stack with the cause chain, and null for non-errors', () => {
    const root = new TypeError('root cause');
    const error = new Error('outer', { cause: root });
    const traceback = exceptionTraceback(error) as string;
    expect(traceback).toContain('Error: outer');
    expect(traceback).toContain('Caused by: TypeError: root cause');
    expect(exceptionTraceback('nope')).toBeNull();
    const looped = new Error('loop');
    (looped as { cause?: unknown }).cause = looped;
    expect(exceptionTraceback(looped)?.match(/Caused by/g) ?? []).toHaveLength(0);
  });
});

describe('exceptionFromInfo: stored exceptions back to errors', () => {
  it('maps Python built-ins back to the JS classes they came from', () => {
    const value = exceptionFromInfo({ exc_type: 'ValueError', exc_message: ['bad'], exc_module: 'builtins' });
    expect(value).toBeInstanceOf(RangeError);
    expect(value.message).toBe('bad');
    expect(exceptionFromInfo({ exc_type: 'Exception', exc_message: ['x'], exc_module: 'builtins' }).constructor).toBe(Error);
    expect(exceptionFromInfo({ exc_type: 'NameError', exc_message: ['n'], exc_module: 'builtins' })).toBeInstanceOf(ReferenceError);
  });

  it('gives other types an Error named after the remote type, with Python’s str(exc) as message', () => {
    const error = exceptionFromInfo({ exc_type: 'KeyError', exc_message: ['k', 2], exc_module: 'builtins' });
    expect(error.name).toBe('KeyError');
    expect(error.message).toBe("('k', 2)");
    expect(exceptionFromInfo({ exc_type: 'myapp.Oops', exc_message: [], exc_module: 'myapp.errors' })).toMatchObject({ name: 'myapp.Oops', message: '' });
    expect(exceptionFromInfo({ exc_type: 'E', exc_message: [{ a: 1 }], exc_module: 'm' }).message).toBe("{'a': 1}");
    expect(exceptionFromInfo('not an info').message).toBe('not an info');
  });

  it('rebuilds Celery’s exceptions as kq’s classes', () => {
    const revoked = exceptionFromInfo({ exc_type: 'TaskRevokedError', exc_message: ['expired'], exc_module: 'celery.exceptions' });
    expect(revoked).toBeInstanceOf(TaskRevokedError);
    expect(revoked.message).toBe('expired');
    const lost = exceptionFromInfo({ exc_type: 'NotRegistered', exc_message: ['tasks.x'], exc_module: 'celery.exceptions' });
    expect(lost).toBeInstanceOf(NotRegistered);
    expect((lost as NotRegistered).taskName).toBe('tasks.x');
    const rejected = exceptionFromInfo({ exc_type: 'Reject', exc_message: ['no', true], exc_module: 'celery.exceptions' }) as Reject;
    expect(rejected).toBeInstanceOf(Reject);
    expect([rejected.reason, rejected.requeue]).toEqual(['no', true]);
    expect(exceptionFromInfo({ exc_type: 'SoftTimeLimitExceeded', exc_message: [], exc_module: 'billiard.exceptions' })).toBeInstanceOf(SoftTimeLimitExceeded);
  });

  it('round-trips JS built-ins with any message', () => {
    const classes = [Error, TypeError, RangeError, ReferenceError, SyntaxError] as const;
    fc.assert(
      fc.property(fc.constantFrom(...classes), fc.string(), (errorClass, message) => {
        const back = exceptionFromInfo(JSON.parse(JSON.stringify(exceptionInfo(new errorClass(message)))));
        expect(back.constructor).toBe(errorClass);
        expect(back.message).toBe(message);
      }),
    );
  });

  it('formats messages as Python’s str(exc)', () => {
    expect(formatExceptionMessage([])).toBe('');
    expect(formatExceptionMessage(['only'])).toBe('only');
    expect(formatExceptionMessage([3])).toBe('3');
    expect(formatExceptionMessage(['a', null, true])).toBe("('a', None, True)");
    expect(formatExceptionMessage('legacy string')).toBe('legacy string');
  });
});
