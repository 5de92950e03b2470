import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DelayLadder, DELAY_TARGET_HEADER, MAX_DELAY_MS, planDelay } from '../src/index';

const ladder = new DelayLadder('kq_delayed');

function plannedDelay(headers: Record<string, string>): number {
  return ladder.levels.filter((level) => headers[level.header] === '1').reduce((sum, level) => sum + level.ttlMs, 0);
}

describe('the delay ladder plan', () => {
  it('composes every delay exactly from the levels, starting at the longest one used', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_DELAY_MS }), (delay) => {
        const plan = planDelay(delay, 'x');
        expect(plan).not.toBeNull();
        expect(plannedDelay(plan!.headers)).toBe(delay);
        const top = ladder.levels.find((level) => plan!.headers[level.header] === '1');
        expect(plan!.exchange).toBe(top?.name);
        expect(plan!.headers[DELAY_TARGET_HEADER]).toBe('x');
      }),
    );
  });

  it('uses whole-second levels for whole seconds and the millisecond tier for the rest', () => {
    expect(planDelay(5000, '')).toEqual({ exchange: 'kq_delayed_2', headers: { [DELAY_TARGET_HEADER]: '', 'kq-delay-2': '1', 'kq-delay-0': '1' }, delayMs: 5000 });
    expect(planDelay(1500.2, 'e')?.headers).toEqual({ [DELAY_TARGET_HEADER]: 'e', 'kq-delay-0': '1', 'kq-delay-ms256': '1', 'kq-delay-ms128': '1', 'kq-delay-ms64': '1', 'kq-delay-ms32': '1', 'kq-delay-ms16': '1', 'kq-delay-ms4': '1', 'kq-delay-ms1': '1' });
  });

  it('has nothing to do for zero or negative delays and refuses what it cannot compose', () => {
    expect(planDelay(0, 'x')).toBeNull();
    expect(planDelay(-5, 'x')).toBeNull();
    expect(() => planDelay(MAX_DELAY_MS + 1, 'x')).toThrow(/8\.5 years/);
    expect(() => planDelay(Number.NaN, 'x')).toThrow(/finite/);
  });

  it('declares one TTL queue per level, dead-lettering down the ladder to the delivery exchange', () => {
    const { queues, exchanges } = new DelayLadder('p').entities('quorum');
    expect(queues).toHaveLength(38);
    expect(queues[0]?.toArguments()).toEqual({
      'x-message-ttl': 2 ** 27 * 1000,
      'x-dead-letter-exchange': 'p_26',
      'x-queue-type': 'quorum',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    });
    expect(queues.find((queue) => queue.name === 'p_0')?.toArguments()['x-dead-letter-exchange']).toBe('p_ms512');
    expect(queues.at(-1)?.toArguments()).toMatchObject({ 'x-message-ttl': 1, 'x-dead-letter-exchange': 'p_delivery' });
    expect(exchanges.find((exchange) => exchange.name === 'p_3')?.arguments).toEqual({ 'alternate-exchange': 'p_2' });
    expect(new DelayLadder('p').entities('classic').queues[0]?.toArguments()).toEqual({ 'x-message-ttl': 2 ** 27 * 1000, 'x-dead-letter-exchange': 'p_26' });
  });

  it('strips its own headers and hop records from a delivered message', () => {
    const stripped = ladder.strip({
      app: 1,
      [DELAY_TARGET_HEADER]: 'orders',
      'kq-delay-2': '1',
      'x-death': [
        { queue: 'kq_delayed_2', count: 1, reason: 'expired' },
        { queue: 'work', count: 2, reason: 'rejected' },
      ],
      'x-first-death-queue': 'kq_delayed_2',
      'x-first-death-exchange': 'kq_delayed_2',
      'x-first-death-reason': 'expired',
    });
    expect(stripped).toEqual({ exchange: 'orders', headers: { app: 1, 'x-death': [{ queue: 'work', count: 2, reason: 'rejected' }] } });
  });
});
