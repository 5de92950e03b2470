import { inspect } from 'node:util';
import { KqError } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { parseBrokerUrl } from '../src/index';

describe('Redis broker URLs it cannot read', () => {
  it('are named without their password, in the message and in whatever is printed of the error', () => {
    let error: unknown;
    try {
      parseBrokerUrl('redis://:p@ss-hunter2@redis host:6379/0', {});
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(KqError);
    expect((error as Error).message).toBe('Cannot read the broker URL "redis://:**@redis host:6379/0": expected redis://host:port/db.');
    // Node's URL error carries its whole input: chained as the cause, util.inspect (console.error) printed it
    expect(inspect(error)).not.toContain('hunter2');
    expect(() => parseBrokerUrl('redis://:hunter2@127.0.0.1:6379/zero', {})).toThrow('The broker URL "redis://:**@127.0.0.1:6379/zero" names database "zero"');
  });
});
