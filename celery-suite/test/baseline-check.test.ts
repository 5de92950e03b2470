import { describe, expect, it } from 'vitest';
import { checkAgainstBaseline, rerunKeyword } from '../src/baseline-check';
import type { PairResults } from '../src/suite-report';

const passed = { outcome: 'passed', message: '' } as const;
const failed = { outcome: 'failed', message: 'TimeoutError' } as const;
const skipped = { outcome: 'skipped', message: 'needs redis' } as const;

describe("CI's kq-only check against the recorded Python run", () => {
  const recorded: PairResults = {
    version: '5.2.6', broker: 'redis', files: ['test_tasks.py'], ranAt: '2026-01-01T00:00:00Z', seconds: {}, kq: {},
    celery: { a: passed, b: passed, c: failed, e: skipped },
  };

  it('fails only what kq fails and Python passed; a test failing on Python too is reported, not counted', () => {
    const result = checkAgainstBaseline({ a: passed, b: failed, c: failed, d: failed, e: skipped }, recorded);
    expect(result.passed).toEqual(['a']);
    expect(result.failed).toEqual(['b']);
    expect(result.notCounted).toEqual(['c', 'd']);
    expect(result.skipped).toEqual(['e']);
  });

  it('without a recorded run nothing kq fails is counted against it', () => {
    expect(checkAgainstBaseline({ a: failed }, undefined).failed).toEqual([]);
  });

  it('reruns failures by their test names, parameters dropped, within the first run’s -k', () => {
    const tests = ['t/integration/test_tasks.py::test_tasks::test_retry', 't/integration/test_canvas.py::test_chord::test_x[a]', 't/integration/test_canvas.py::test_chord::test_x[b]'];
    expect(rerunKeyword(tests, undefined)).toBe('test_retry or test_x');
    expect(rerunKeyword(tests.slice(0, 1), 'not test_wrong_arguments')).toBe('(not test_wrong_arguments) and (test_retry)');
  });
});
