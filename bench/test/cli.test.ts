import { describe, expect, it } from 'vitest';
import { parseOptions } from '../src/cli';

describe('parseOptions', () => {
  it('defaults to the full run the issue describes', () => {
    const options = parseOptions([]);
    expect(options).toMatchObject({ smoke: false, brokers: ['redis', 'amqp', 'postgres'], systems: null, n: 20_000, roundTrips: 1000, runs: 3, write: true });
    expect(options.redisUrl).toMatch(/\/15$/);
    expect(options.postgresUrl).toMatch(/\/kqbench$/);
  });

  it('runs every workload by default, the new ones (scale, memory, under load) included', () => {
    expect(parseOptions([]).workloads).toEqual(['W1', 'W2', 'W3', 'W4', 'W5', 'W6']);
    expect(parseOptions(['--workloads', 'w4,W6']).workloads).toEqual(['W4', 'W6']);
  });

  it('--smoke runs everything once with N = 200 and writes nothing', () => {
    expect(parseOptions(['--smoke'])).toMatchObject({ smoke: true, n: 200, roundTrips: 200, runs: 1, write: false });
  });

  it('reads --only, --systems (with aliases), --workloads, --n and --runs, ignoring a pnpm "--"', () => {
    const options = parseOptions(['--', '--only', 'redis', '--systems', 'kq,celery,raw', '--workloads', 'w2,W3', '--n', '500', '--runs', '5']);
    expect(options.brokers).toEqual(['redis']);
    expect(options.systems).toEqual(['kq', 'python-celery', 'raw-ioredis', 'raw-amqplib']);
    expect(options.workloads).toEqual(['W2', 'W3']);
    expect(options.n).toBe(500);
    expect(options.runs).toBe(5);
  });

  it('says what is wrong with a bad flag value', () => {
    expect(() => parseOptions(['--only', 'kafka'])).toThrow(/--only takes redis, amqp or postgres/);
    expect(() => parseOptions(['--systems', 'sidekiq'])).toThrow(/Unknown system "sidekiq"/);
    expect(() => parseOptions(['--n', '0'])).toThrow(/--n takes a whole number/);
    expect(() => parseOptions(['--workloads', 'W7'])).toThrow(/Unknown workload "W7"/);
    expect(() => parseOptions(['--frobnicate'])).toThrow();
  });
});
