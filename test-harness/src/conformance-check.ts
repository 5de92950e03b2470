import { ConformanceContext } from './conformance-context';
import { resolveSuiteSetup, type SuiteSetup, type TransportSuiteOptions } from './suite-options';

/** One check of the suite: a plain async function that throws when the transport breaks the contract. */
export type CheckFunction = (context: ConformanceContext) => Promise<void>;

export interface ConformanceCheck {
  /** The `it` name. */
  readonly name: string;
  readonly run: CheckFunction;
  /** Why this check cannot run with these capabilities/options, or undefined when it runs. */
  readonly skipReason?: (setup: SuiteSetup) => string | undefined;
  /** Test timeout before `timeoutScale`, when the default (30 s) is not enough. */
  readonly timeoutMs?: number | ((setup: SuiteSetup) => number);
}

export interface ConformanceGroup {
  /** The `describe` name. */
  readonly name: string;
  /** Why the whole group cannot run, or undefined when it runs. */
  readonly skipReason?: (setup: SuiteSetup) => string | undefined;
  readonly checks: readonly ConformanceCheck[];
}

/** Test timeout of a check before `timeoutScale`. */
export const DEFAULT_CHECK_TIMEOUT_MS = 30_000;

/**
 * Runs one check against a transport outside `defineTransportSuite`, with its own context, and cleans up.
 * The check's failure (or an asynchronous channel/transport error it provoked) is the rejection. The suite's
 * self-tests use this to prove each check fails against a deliberately broken transport.
 */
export async function runCheck(check: CheckFunction, options: TransportSuiteOptions): Promise<void> {
  await runWithContext(check, await resolveSuiteSetup(options));
}

/** Runs a check in a fresh context: cleanup always happens, and asynchronous errors fail the check. */
export async function runWithContext(check: CheckFunction, setup: SuiteSetup): Promise<void> {
  const context = new ConformanceContext(setup);
  try {
    await check(context);
    if (context.asyncErrors.length > 0) {
      throw new Error(
        `The transport reported ${context.asyncErrors.length} asynchronous error(s) during the check: ` +
          context.asyncErrors.slice(0, 5).join(' | '),
      );
    }
  } finally {
    await context.cleanup();
  }
}
