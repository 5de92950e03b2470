import { describe, it } from 'vitest';
import { DEFAULT_CHECK_TIMEOUT_MS, runWithContext, type ConformanceCheck, type ConformanceGroup } from './conformance-check';
import { conformanceGroups } from './groups/index';
import { resolveSuiteSetup, type SuiteSetup, type TransportSuiteOptions } from './suite-options';

/**
 * Registers the whole conformance suite for a transport under vitest: one `describe` per group, one `it` per
 * check. Groups and checks the transport's capabilities rule out are registered as skipped, with the reason in
 * their name. Call it at the top level of a test file:
 *
 * ```ts
 * defineTransportSuite({ name: 'memory', create: () => new MemoryTransport({ broker: 'conformance' }) });
 * ```
 */
export function defineTransportSuite(options: TransportSuiteOptions, groups: readonly ConformanceGroup[] = conformanceGroups): void {
  // vitest awaits an async describe factory while collecting, which lets capabilities come from the transport.
  describe(`transport conformance: ${options.name}`, async () => {
    const setup = await resolveSuiteSetup(options);
    assertKnownSkips(setup, groups);
    for (const group of groups) registerGroup(group, setup);
  });
}

function registerGroup(group: ConformanceGroup, setup: SuiteSetup): void {
  const groupSkip = group.skipReason?.(setup);
  if (groupSkip !== undefined) {
    describe.skip(`${group.name} — skipped: ${groupSkip}`, () => {
      for (const check of group.checks) it(check.name, () => undefined);
    });
    return;
  }
  describe(group.name, () => {
    for (const check of group.checks) registerCheck(check, setup);
  });
}

function registerCheck(check: ConformanceCheck, setup: SuiteSetup): void {
  const skip = check.skipReason?.(setup) ?? setup.skipChecks[check.run.name];
  if (skip !== undefined) {
    it.skip(`${check.name} — skipped: ${skip}`, () => undefined);
    return;
  }
  const base = typeof check.timeoutMs === 'function' ? check.timeoutMs(setup) : (check.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS);
  it(check.name, () => runWithContext(check.run, setup), Math.ceil(base * setup.timeoutScale));
}

/** A misspelt `skipChecks` key would silently skip nothing: refuse it. */
function assertKnownSkips(setup: SuiteSetup, groups: readonly ConformanceGroup[]): void {
  const known = new Set(groups.flatMap((group) => group.checks.map((check) => check.run.name)));
  const unknown = Object.keys(setup.skipChecks).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new Error(`skipChecks names no check called ${unknown.join(', ')}. Known checks: ${[...known].sort().join(', ')}`);
  }
}
