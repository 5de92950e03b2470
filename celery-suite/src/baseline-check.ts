import { verdict, type PairResults, type TestResult } from './suite-report';

export interface BaselineCheck {
  readonly passed: readonly string[];
  /** kq fails it where the recorded Python run passed it: what fails the check. */
  readonly failed: readonly string[];
  /** kq fails it and so did the recorded Python run (or it has no record): reported, not counted. */
  readonly notCounted: readonly string[];
  readonly skipped: readonly string[];
}

/**
 * kq's fresh results against the Python baseline recorded for the pair in results.json (the last full run), for a
 * quick CI run of kq only: a test fails the check when kq fails it and the recorded Python worker passed it.
 */
export function checkAgainstBaseline(kq: Readonly<Record<string, TestResult>>, recorded: PairResults | undefined): BaselineCheck {
  const passed: string[] = [];
  const failed: string[] = [];
  const notCounted: string[] = [];
  const skipped: string[] = [];
  for (const test of Object.keys(kq).sort()) {
    const python = recorded?.celery[test];
    const result = verdict(kq[test], python);
    if (result === 'pass') passed.push(test);
    else if (result === 'skipped') skipped.push(test);
    else if (python?.outcome === 'passed') failed.push(test);
    else notCounted.push(test);
  }
  return { passed, failed, notCounted, skipped };
}

/**
 * The pytest `-k` expression that runs `tests` (node ids such as `t/integration/test_tasks.py::test_tasks::test_retry`
 * or `…::test_x[param]`) again, within `keyword` when the first run had one. `-k` matches names, so a name that is
 * part of another's runs that one too; only the results of `tests` are read.
 */
export function rerunKeyword(tests: readonly string[], keyword: string | undefined): string {
  const names = [...new Set(tests.map((test) => (test.split('::').at(-1) ?? test).replace(/\[.*$/, '')))];
  const only = names.join(' or ');
  return keyword ? `(${keyword}) and (${only})` : only;
}
