// Class brands: `instanceof` a kq class holds for instances from another copy of @kq/core in the process (issue #30).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as core from '@kq/core';
import { brandClass, isBrandedInstance, KqError } from '@kq/core';

/** A second, complete copy of @kq/core's modules, as an older release without the package claim (or a bundle) is. */
let other: typeof core;
beforeAll(async () => {
  vi.resetModules();
  other = await import('@kq/core');
  expect(other.KqError).not.toBe(core.KqError);
});

describe('brandClass', () => {
  it('makes a kq error from the other copy instanceof ours, by its own class and its ancestors only', () => {
    const theirs = new other.ContentDisallowed('application/x-python-serialize', ['json']);
    expect(theirs).toBeInstanceOf(core.ContentDisallowed);
    expect(theirs).toBeInstanceOf(core.KqError);
    expect(theirs).toBeInstanceOf(Error);
    expect(theirs).not.toBeInstanceOf(core.DecodeError);
    expect(new core.DecodeError('x')).toBeInstanceOf(other.DecodeError); // both ways
    // Two levels of branded classes: a TransportNotInstalled is an OptionalDependencyMissing of either copy.
    expect(new other.TransportNotInstalled('x', '@kq/x')).toBeInstanceOf(core.OptionalDependencyMissing);
    expect(new other.OptionalDependencyMissing('@kq/x', 'x')).not.toBeInstanceOf(core.TransportNotInstalled);
  });

  it('lets our checks act on the other copy\'s objects: recoverable errors, entities, sets, envelopes', () => {
    expect(core.isRecoverable(new other.ConnectionLost('gone'))).toBe(true);
    expect(core.isRecoverable(new other.BrokerUnreachable('redis://x', 3))).toBe(false);
    expect(new other.Exchange('ex', { type: 'topic' })).toBeInstanceOf(core.Exchange);
    expect(new other.Queue('q')).toBeInstanceOf(core.Queue);
    expect(new other.Queue('q')).not.toBeInstanceOf(core.Exchange);
    // Its timestamps come along (merged as a LimitedSet, not as a plain iterable stamped now).
    const theirs = new other.LimitedSet<string>({ maxlen: 10 });
    theirs.add('a', 1000.5);
    theirs.add('b', 2000.5);
    const ours = new core.LimitedSet<string>();
    ours.update(theirs);
    expect(ours.toWire()).toEqual(theirs.toWire());
    expect(new other.MalformedEnvelope('bad')).toBeInstanceOf(core.MalformedEnvelope);
    expect(new other.MemoryBroker('brands')).toBeInstanceOf(core.MemoryBroker);
  });

  it('brands every error class @kq/core exports', () => {
    const prototypeOf = (value: unknown): unknown => (typeof value === 'function' ? (value as { prototype?: unknown }).prototype : undefined);
    const errorClasses = Object.entries(core).filter(([, value]) => Function.prototype[Symbol.hasInstance].call(Error, prototypeOf(value)));
    expect(errorClasses.length).toBeGreaterThan(20);
    for (const [name, errorClass] of errorClasses) expect(isBrandedInstance(Object.create(prototypeOf(errorClass) as object), `@kq/core:${name}`), name).toBe(true);
  });

  it('leaves a subclass that is not branded itself (a user\'s) with the ordinary instanceof', () => {
    class AppError extends KqError {}
    class OtherAppError extends KqError {}
    expect(new AppError('x')).toBeInstanceOf(KqError);
    expect(new AppError('x')).toBeInstanceOf(other.KqError);
    expect(new AppError('x')).toBeInstanceOf(AppError);
    expect(new OtherAppError('x')).not.toBeInstanceOf(AppError);
    expect(new KqError('x')).not.toBeInstanceOf(AppError);
  });

  it('answers false for primitives, null, and a branded prototype itself', () => {
    for (const value of [null, undefined, 1, 'KqError', Symbol.for('kq.class-brand')]) expect((value as unknown as object) instanceof KqError).toBe(false);
    expect(KqError.prototype instanceof KqError).toBe(false);
    expect(Object.create(KqError.prototype)).toBeInstanceOf(KqError);
  });

  it('isBrandedInstance checks by id, without the class', () => {
    class Thing {}
    brandClass(Thing, '@kq-test:Thing');
    class Sub extends Thing {}
    expect(isBrandedInstance(new Sub(), '@kq-test:Thing')).toBe(true);
    expect(new Sub()).toBeInstanceOf(Thing);
    expect(isBrandedInstance({}, '@kq-test:Thing')).toBe(false);
    expect(isBrandedInstance(new KqError('x'), '@kq-test:Thing')).toBe(false);
  });
});
