import { describe, expect, it } from 'vitest';
import { byTest, mergeResults, renderReport, verdict, type PairResults } from '../src/suite-report';

const passed = { outcome: 'passed', message: '' } as const;
const failed = { outcome: 'failed', message: 'AssertionError: boom | pipe' } as const;

describe('celery-suite report', () => {
  it('counts a test failing on the Python baseline too as such, never against kq', () => {
    expect(verdict(passed, failed)).toBe('pass');
    expect(verdict(failed, passed)).toBe('fail');
    expect(verdict(failed, failed)).toBe('fails on Python too');
    expect(verdict(undefined, undefined)).toBe('fail');
    expect(verdict({ outcome: 'skipped', message: '' }, passed)).toBe('skipped');
  });

  it("takes a test's worst phase: a failed subtest or teardown fails it", () => {
    const results = byTest([
      { nodeid: 't/integration/test_canvas.py::a', when: 'call', outcome: 'passed', message: '' },
      { nodeid: 't/integration/test_canvas.py::a', when: 'call', outcome: 'failed', message: 'subtest' },
      { nodeid: 't/integration/test_canvas.py::a', when: 'teardown', outcome: 'passed', message: '' },
      { nodeid: 't/integration/test_canvas.py::b', when: 'setup', outcome: 'skipped', message: 'needs redis' },
    ]);
    expect(results['t/integration/test_canvas.py::a']).toEqual({ outcome: 'failed', message: 'subtest' });
    expect(results['t/integration/test_canvas.py::b']?.outcome).toBe('skipped');
  });

  it('replaces the pairs just run and keeps the rest of the matrix', () => {
    const pair = (version: string, broker: string, kq: PairResults['kq']): PairResults => ({
      version, broker, files: ['test_canvas.py'], ranAt: '2026-01-01T00:00:00Z', seconds: {}, kq, celery: {},
    });
    const merged = mergeResults([pair('5.2.6', 'redis', {}), pair('5.5.3', 'redis', {})], [pair('5.2.6', 'redis', { x: passed })]);
    expect(merged.map((p) => [p.version, Object.keys(p.kq)])).toEqual([['5.2.6', ['x']], ['5.5.3', []]]);
  });

  it('renders counts per file and the tests not passing, with both workers\' messages escaped for the table', () => {
    const markdown = renderReport(
      [{
        version: '5.2.6', broker: 'redis', files: ['test_canvas.py'], ranAt: '2026-01-01T00:00:00Z', seconds: { kq: 10, celery: 12 },
        kq: { 't/integration/test_canvas.py::a': passed, 't/integration/test_canvas.py::b': failed },
        celery: { 't/integration/test_canvas.py::a': passed, 't/integration/test_canvas.py::b': passed },
      }],
      'notes',
    );
    expect(markdown).toContain('| 5.2.6 | redis | test_canvas.py | 1 | 1 | 0 | 0 | 2 of 2 | 10 s / 12 s |');
    expect(markdown).toContain('| `test_canvas.py::b` | fail | failed: AssertionError: boom \\| pipe | passed |');
  });
});
