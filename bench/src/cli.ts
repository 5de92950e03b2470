// Command-line flags of the benchmark.
import { parseArgs } from 'node:util';
import { WORKLOADS, type Workload } from './cases';
import type { BrokerKind } from './protocol';
import { parseSystems, SYSTEM_IDS, type SystemId } from './systems';

export interface BenchOptions {
  smoke: boolean;
  brokers: BrokerKind[];
  systems: SystemId[] | null;
  workloads: Workload[];
  n: number;
  roundTrips: number;
  runs: number;
  redisUrl: string;
  amqpUrl: string;
  postgresUrl: string;
  /** Write bench/RESULTS.md and bench/results.svg (full runs only). */
  write: boolean;
  /** Also run the standalone transport/pool benchmarks in src/ and append their output. */
  extras: boolean;
  help: boolean;
}

export const USAGE = `Usage: pnpm bench [-- flags]        (from the repository root; or: cd bench && pnpm start -- flags)

  --smoke              every case once with N = 200, checking completeness only (CI); writes nothing
  --only redis|amqp|postgres  one broker's cases
  --systems a,b,...    ${SYSTEM_IDS.join(', ')} (also: celery, bee, raw)
  --workloads W1,...   which workloads: W1 enqueue, W2 drain, W3 round trip, W4 scale, W5 memory,
                       W6 round trip under load (default all)
  --n N                tasks per enqueue/drain run (default 20000)
  --round-trips N      sequential round trips per W3 run (default 1000)
  --runs N             runs per case, median/min/max reported (default 3)
  --redis-url URL      a Redis database the benchmark may FLUSHDB (default redis://127.0.0.1:6379/15)
  --amqp-url URL       RabbitMQ (default amqp://guest:guest@127.0.0.1:5672)
  --postgres-url URL   a PostgreSQL database of the benchmark's own, created if missing (default
                       postgresql://postgres@127.0.0.1:5432/kqbench)
  --no-write           do not write RESULTS.md / results.svg
  --extras             also run src/redis-transport-bench.ts, amqp-transport-bench.ts, pool-bench.ts (those that
                       exist) and append their output to RESULTS.md
`;

export function parseOptions(argv: readonly string[]): BenchOptions {
  // pnpm passes a literal "--" through when flags follow `pnpm bench --`.
  const args = argv.filter((arg) => arg !== '--');
  const { values } = parseArgs({
    args,
    options: {
      smoke: { type: 'boolean', default: false },
      only: { type: 'string' },
      systems: { type: 'string' },
      workloads: { type: 'string' },
      n: { type: 'string' },
      'round-trips': { type: 'string' },
      runs: { type: 'string' },
      'redis-url': { type: 'string' },
      'amqp-url': { type: 'string' },
      'postgres-url': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      extras: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const smoke = values.smoke === true;
  const only = values.only;
  if (only !== undefined && only !== 'redis' && only !== 'amqp' && only !== 'postgres') throw new Error(`--only takes redis, amqp or postgres, not "${only}".`);
  return {
    smoke,
    brokers: only ? [only] : ['redis', 'amqp', 'postgres'],
    systems: values.systems === undefined ? null : parseSystems(values.systems),
    workloads: values.workloads === undefined ? [...WORKLOADS] : parseWorkloads(values.workloads),
    n: positive('--n', values.n, smoke ? 200 : 20_000),
    roundTrips: positive('--round-trips', values['round-trips'], smoke ? 200 : 1000),
    runs: positive('--runs', values.runs, smoke ? 1 : 3),
    redisUrl: values['redis-url'] ?? process.env['KQBENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379/15',
    amqpUrl: values['amqp-url'] ?? process.env['KQBENCH_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672',
    postgresUrl: values['postgres-url'] ?? process.env['KQBENCH_POSTGRES_URL'] ?? 'postgresql://postgres@127.0.0.1:5432/kqbench',
    write: !smoke && values['no-write'] !== true,
    extras: !smoke && values.extras === true,
    help: values.help === true,
  };
}

function parseWorkloads(list: string): Workload[] {
  const workloads = list.split(',').map((part) => part.trim().toUpperCase()).filter((part) => part !== '');
  for (const workload of workloads) {
    if (!(WORKLOADS as readonly string[]).includes(workload)) throw new Error(`Unknown workload "${workload}" in --workloads: use ${WORKLOADS.join(', ')}.`);
  }
  return workloads as Workload[];
}

function positive(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new Error(`${flag} takes a whole number ≥ 1, not "${value}".`);
  return number;
}
