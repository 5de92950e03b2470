import type { Transport } from '@kq/core';

/** What every capability suite takes: how to reach the transport under test, and whether to run at all. */
export interface CapabilitySuiteOptions {
  /** Shown in the `describe` name, e.g. `memory` or `redis`. */
  name: string;
  /**
   * Makes a fresh transport on the broker under test. Called more than once per test: each transport stands for a
   * separate process, and all of them must share one broker.
   */
  create: () => Transport | Promise<Transport>;
  /** Why the suite cannot run here (a broker that is not reachable); registered as skipped with the reason. */
  skip?: string | false;
}

/** `describe` or `describe.skip` with the reason in its name. */
export function suiteTitle(suite: string, options: Pick<CapabilitySuiteOptions, 'name' | 'skip'>): string {
  return options.skip ? `${suite}: ${options.name} — skipped: ${options.skip}` : `${suite}: ${options.name}`;
}

/** Opens `count` transports on the broker under test (separate processes, as far as the broker can tell). */
export async function openTransports(create: CapabilitySuiteOptions['create'], count: number): Promise<Transport[]> {
  const transports: Transport[] = [];
  for (let i = 0; i < count; i++) {
    const transport = await create();
    await transport.connect();
    transports.push(transport);
  }
  return transports;
}

/** The capability `method` of `transport`, or an error saying the transport does not offer it. */
export function capabilityOf<K extends 'beatLease' | 'cycleRegister' | 'deadLetters'>(transport: Transport, method: K): NonNullable<Transport[K]> {
  const capability = transport[method];
  if (typeof capability !== 'function') throw new Error(`The ${transport.name} transport has no ${method}(): the suite needs one.`);
  return capability.bind(transport) as NonNullable<Transport[K]>;
}
