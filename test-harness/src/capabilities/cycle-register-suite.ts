import { randomUUID } from 'node:crypto';
import type { CycleRegister, Transport } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { sleep } from '../wait-for';
import { capabilityOf, openTransports, suiteTitle, type CapabilitySuiteOptions } from './capability-suite-options';

export interface CycleRegisterSuiteOptions extends CapabilitySuiteOptions {
  /** Removes what register `key` left on the broker besides its value (RabbitMQ: the register queue). */
  cleanup?: (transport: Transport, key: string) => Promise<void>;
}

/**
 * Checks a transport's `cycleRegister()` against core's `CycleRegister` contract, with one register per transport
 * (per process): one creator among concurrent ones, steps, claims and cycles ordered, removal guarded by the cycle,
 * and the time to live. Call at the top level of a test file.
 */
export function defineCycleRegisterSuite(options: CycleRegisterSuiteOptions): void {
  (options.skip ? describe.skip : describe)(suiteTitle('cycle register', options), () => {
    it('creates once among concurrent creators, and orders steps, claims and cycles', async () => {
      await withRegisters(options, 3, async (key, [ra, rb, rc]) => {
        const [a, b, c] = [ra!, rb!, rc!];
        // Three workers bootstrap at once: one cycle.
        const created = await Promise.all([a, b, c].map((register, i) => register.create(key, { cycle: `c${i}`, step: 0 }, 10_000)));
        expect(created.filter(Boolean)).toHaveLength(1);
        const cycle = `c${created.indexOf(true)}`;
        expect(await b.read(key)).toEqual({ cycle, step: 0, claimedBy: null });

        // A run claims step 0; a second copy of the same step is told it is busy; the claim holder may renew.
        expect(await a.begin(key, { cycle, step: 0 }, 'run-1', 10_000, 10_000)).toBe('current');
        expect(await b.begin(key, { cycle, step: 0 }, 'run-2', 10_000, 10_000)).toBe('busy');
        expect(await a.begin(key, { cycle, step: 0 }, 'run-1', 10_000, 10_000)).toBe('current');
        expect((await c.read(key))?.claimedBy).toBe('run-1');
        // Another cycle's message is superseded.
        expect(await b.begin(key, { cycle: 'other', step: 0 }, 'run-3', 10_000, 10_000)).toBe('superseded');
        expect(await b.advance(key, { cycle: 'other', step: 0 }, 1, 10_000)).toBe('superseded');

        // The run advances the cycle; a redelivered copy of step 0 can neither run nor advance it again.
        expect(await a.advance(key, { cycle, step: 0 }, 1, 10_000)).toBe('advanced');
        expect(await b.advance(key, { cycle, step: 0 }, 1, 10_000)).toBe('stale');
        expect(await b.begin(key, { cycle, step: 0 }, 'run-2', 10_000, 10_000)).toBe('stale');
        expect(await c.read(key)).toEqual({ cycle, step: 1, claimedBy: null });
        expect(await c.begin(key, { cycle, step: 1 }, 'run-4', 10_000, 10_000)).toBe('current');

        // A claim that ran out (its worker died) can be taken over.
        expect(await a.advance(key, { cycle, step: 1 }, 2, 10_000)).toBe('advanced');
        expect(await a.begin(key, { cycle, step: 2 }, 'run-5', 1, 10_000)).toBe('current');
        await sleep(20);
        expect(await b.begin(key, { cycle, step: 2 }, 'run-6', 10_000, 10_000)).toBe('current');

        // Removal is guarded by the cycle id.
        expect(await c.remove(key, 'other')).toBe(false);
        expect(await c.remove(key, cycle)).toBe(true);
        expect(await a.read(key)).toBeNull();
        expect(await a.begin(key, { cycle, step: 2 }, 'run-7', 10_000, 10_000)).toBe('absent');
        expect(await a.advance(key, { cycle, step: 2 }, 3, 10_000)).toBe('absent');
        expect(await a.remove(key)).toBe(false);
      });
    });

    it('a register past its time to live is gone', async () => {
      await withRegisters(options, 1, async (key, [register]) => {
        // 400 ms to live, not less: the second create must reach the broker before it runs out, on a busy machine too.
        expect(await register!.create(key, { cycle: 'c', step: 0 }, 400)).toBe(true);
        expect(await register!.create(key, { cycle: 'd', step: 0 }, 10_000)).toBe(false);
        await sleep(500);
        expect(await register!.read(key)).toBeNull();
        expect(await register!.create(key, { cycle: 'd', step: 0 }, 10_000)).toBe(true);
        expect(await register!.read(key)).toEqual({ cycle: 'd', step: 0, claimedBy: null });
      });
    });
  });
}

async function withRegisters(options: CycleRegisterSuiteOptions, count: number, body: (key: string, registers: CycleRegister[]) => Promise<void>): Promise<void> {
  const key = `register-suite-${randomUUID()}`;
  const transports = await openTransports(options.create, count);
  const registers = transports.map((transport) => capabilityOf(transport, 'cycleRegister')());
  try {
    await body(key, registers);
  } finally {
    await registers[0]!.remove(key).catch(() => false);
    await options.cleanup?.(transports[0]!, key);
    await Promise.all(registers.map((register) => register.close().catch(() => undefined)));
    await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
  }
}
