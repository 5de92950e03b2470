// processWide: module state every copy of kq in the process shares (issue #30).
import { expect, it, vi } from 'vitest';
import { processWide } from '@kq/core';

it('gives every copy of @kq/core the value the first one made, under a Symbol.for key', async () => {
  const made = processWide('kq-test.process-wide.v1', () => new Map<string, number>());
  vi.resetModules();
  const other = await import('@kq/core');
  expect(other.processWide).not.toBe(processWide);
  const create = vi.fn(() => new Map<string, number>());
  expect(other.processWide('kq-test.process-wide.v1', create)).toBe(made);
  expect(create).not.toHaveBeenCalled();
  expect((globalThis as Record<symbol, unknown>)[Symbol.for('kq-test.process-wide.v1')]).toBe(made);
  expect(processWide('kq-test.process-wide.v2', () => new Map())).not.toBe(made); // another version keeps apart
});
