import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AmqpTransport } from '@kq/amqp';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { App } from '../src/app';
import { MemoryCycleRegister, type CycleRegister } from '../src/periodic/index';
// The transport packages' registers, imported by path until their index.ts export them.
import { RedisCycleRegister } from '../../redis/src/cycle-register';
import { AmqpCycleRegister } from '../../amqp/src/cycle-register';

const registers = [
  { kind: 'memory', url: 'memory://periodic-register', up: true },
  { kind: 'redis', url: `${brokerUrls.redis.replace(/\/\d*$/, '')}/0`, up: await brokerReachable('redis') },
  { kind: 'amqp', url: brokerUrls.amqp, up: await brokerReachable('amqp') },
] as const;

/** One register per App (per connection), as separate worker processes would have. */
async function openRegisters(url: string, count: number): Promise<{ apps: App[]; registers: CycleRegister[] }> {
  const apps = Array.from({ length: count }, (_, i) => new App(`register-${i}`, { broker: url }));
  const registers: CycleRegister[] = [];
  for (const app of apps) {
    await app.connection.connect();
    const transport = await app.connection.transport();
    if (transport.name === 'redis') registers.push(new RedisCycleRegister(transport as RedisTransport));
    else if (transport.name === 'amqp') registers.push(new AmqpCycleRegister(transport as AmqpTransport));
    else registers.push(new MemoryCycleRegister(transport));
  }
  return { apps, registers };
}

describe.concurrent.each(registers)('the $kind cycle register', ({ kind, url, up }) => {
  it.skipIf(!up)('creates once among concurrent creators, and orders steps, claims and cycles', async () => {
    const key = `register-${kind}-${randomUUID()}`;
    const { apps, registers: [a, b, c] } = await openRegisters(url, 3);
    const [ra, rb, rc] = [a!, b!, c!];
    try {
      // Three workers bootstrap at once: one cycle.
      const created = await Promise.all([ra, rb, rc].map((register, i) => register.create(key, { cycle: `c${i}`, step: 0 }, 10_000)));
      expect(created.filter(Boolean)).toHaveLength(1);
      const cycle = `c${created.indexOf(true)}`;
      expect(await rb.read(key)).toEqual({ cycle, step: 0, claimedBy: null });

      // A run claims step 0; a second copy of the same step is told it is busy; the claim holder may renew.
      expect(await ra.begin(key, { cycle, step: 0 }, 'run-1', 10_000, 10_000)).toBe('current');
      expect(await rb.begin(key, { cycle, step: 0 }, 'run-2', 10_000, 10_000)).toBe('busy');
      expect(await ra.begin(key, { cycle, step: 0 }, 'run-1', 10_000, 10_000)).toBe('current');
      expect((await rc.read(key))?.claimedBy).toBe('run-1');
      // Another cycle's message is superseded.
      expect(await rb.begin(key, { cycle: 'other', step: 0 }, 'run-3', 10_000, 10_000)).toBe('superseded');

      // The run advances the cycle; a redelivered copy of step 0 can neither run nor advance it again.
      expect(await ra.advance(key, { cycle, step: 0 }, 1, 10_000)).toBe('advanced');
      expect(await rb.advance(key, { cycle, step: 0 }, 1, 10_000)).toBe('stale');
      expect(await rb.begin(key, { cycle, step: 0 }, 'run-2', 10_000, 10_000)).toBe('stale');
      expect(await rc.read(key)).toEqual({ cycle, step: 1, claimedBy: null });
      expect(await rc.begin(key, { cycle, step: 1 }, 'run-4', 10_000, 10_000)).toBe('current');

      // A claim that ran out (its worker died) can be taken over.
      expect(await ra.advance(key, { cycle, step: 1 }, 2, 10_000)).toBe('advanced');
      expect(await ra.begin(key, { cycle, step: 2 }, 'run-5', 1, 10_000)).toBe('current');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await rb.begin(key, { cycle, step: 2 }, 'run-6', 10_000, 10_000)).toBe('current');

      // Removal is guarded by the cycle id.
      expect(await rc.remove(key, 'other')).toBe(false);
      expect(await rc.remove(key, cycle)).toBe(true);
      expect(await ra.read(key)).toBeNull();
      expect(await ra.begin(key, { cycle, step: 2 }, 'run-7', 10_000, 10_000)).toBe('absent');
      expect(await ra.advance(key, { cycle, step: 2 }, 3, 10_000)).toBe('absent');
    } finally {
      await Promise.all([ra, rb, rc].map((register) => register.remove(key).catch(() => false)));
      if (kind === 'amqp') await (await apps[0]!.connection.channel()).deleteQueue(`${key}.periodic.register`);
      await Promise.all([ra, rb, rc].map((register) => register.close()));
      await Promise.all(apps.map((app) => app.close()));
    }
  });

  it.skipIf(!up)('a register past its time to live is gone', async () => {
    const key = `register-ttl-${kind}-${randomUUID()}`;
    const { apps, registers: [register] } = await openRegisters(url, 1);
    try {
      expect(await register!.create(key, { cycle: 'c', step: 0 }, 50)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await register!.read(key)).toBeNull();
      expect(await register!.create(key, { cycle: 'd', step: 0 }, 10_000)).toBe(true);
    } finally {
      await register!.remove(key).catch(() => false);
      if (kind === 'amqp') await (await apps[0]!.connection.channel()).deleteQueue(`${key}.periodic.register`);
      await Promise.all(apps.map((app) => app.close()));
    }
  });
});
