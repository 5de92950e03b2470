import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../src/stats';

describe('summarize', () => {
  it('gives the middle run of an odd count, with min and max', () => {
    expect(summarize([30, 10, 20])).toEqual({ median: 20, min: 10, max: 30 });
  });

  it('averages the two middle runs of an even count', () => {
    expect(summarize([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4 });
  });

  it('refuses zero runs', () => {
    expect(() => summarize([])).toThrow(/zero runs/);
  });
});

describe('percentile (nearest rank)', () => {
  const samples = Array.from({ length: 1000 }, (_, i) => i + 1); // 1..1000

  it('p50 of 1..1000 is 500 and p99 is 990', () => {
    expect(percentile(samples, 50)).toBe(500);
    expect(percentile(samples, 99)).toBe(990);
  });

  it('p100 is the maximum and a tiny p the minimum', () => {
    expect(percentile(samples, 100)).toBe(1000);
    expect(percentile(samples, 0.01)).toBe(1);
  });

  it('does not depend on the order of the samples', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
  });
});
