/**
 * `pnpm faults` runs every scenario on private Redis and RabbitMQ nodes and writes faults/RESULTS.md;
 * `pnpm faults:smoke` runs the short CI subset and exits non-zero on any failure.
 * Options: `--smoke`, `--broker redis|amqp|postgres|sentinel|rabbit-cluster|redis-cluster` (comma-separated), `--scenario <name>[,<name>]`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BrokerNode } from './brokers/broker-node';
import { PostgresNode } from './brokers/postgres-node';
import { RabbitCluster, RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { RedisClusterNode } from './brokers/redis-cluster';
import { RedisNode } from './brokers/redis-node';
import { SentinelNode } from './brokers/sentinel-node';
import { resultTable, resultsDocument } from './report';
import { runScenario, type ScenarioResult } from './runner';
import { SCENARIOS, type Scenario } from './scenario';

const CLUSTER_SMOKE: readonly string[] = ['sigkill', 'connection-kill', 'reshard'];

// pnpm 10 passes the `--` of `pnpm --filter @kq/faults start -- --broker redis` through to the script.
const args = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({ args, options: { smoke: { type: 'boolean' }, broker: { type: 'string' }, scenario: { type: 'string' } } });
const smoke = values.smoke ?? false;
const wanted = values.scenario?.split(',');
const scenarios = SCENARIOS.filter((s) => (wanted ? wanted.includes(s.name) : !smoke || s.smoke));
const BROKER_KINDS = ['redis', 'amqp', 'postgres', 'sentinel', 'rabbit-cluster', 'redis-cluster'] as const;
const chosen = new Set(values.broker?.split(',') ?? BROKER_KINDS);
const unknown = [...chosen].filter((kind) => !(BROKER_KINDS as readonly string[]).includes(kind));
if (unknown.length > 0) {
  console.error(`unknown --broker ${unknown.join(', ')}: choose from ${BROKER_KINDS.join(', ')} (comma-separated)`);
  process.exit(2);
}
const brokers: Array<() => BrokerNode> = [];
if (chosen.has('redis')) brokers.push(() => new RedisNode(16_390 + Math.floor(Math.random() * 200)));
if (chosen.has('amqp')) brokers.push(() => new RabbitNode(15_810 + Math.floor(Math.random() * 80)));
if (chosen.has('postgres')) brokers.push(() => new PostgresNode(15_440 + Math.floor(Math.random() * 80)));
if (chosen.has('sentinel')) brokers.push(() => new SentinelNode(16_600 + 5 * Math.floor(Math.random() * 40)));
// Three RabbitMQ nodes start in parallel and join in ~10 s, so the cluster is in the smoke run too.
if (chosen.has('rabbit-cluster')) brokers.push(() => new RabbitCluster(15_900 + 3 * Math.floor(Math.random() * 30)));
if (chosen.has('redis-cluster')) brokers.push(() => new RedisClusterNode());

const results: ScenarioResult[] = [];
let current: BrokerNode | undefined;
const cleanUp = async (): Promise<void> => {
  await current?.destroy().catch(() => undefined);
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
}

try {
  for (const make of brokers) {
    current = make();
    console.log(`starting a private ${current.kind} node at ${current.url.replace(/\/\/[^@/;]*@/g, '//')}`);
    await current.start();
    const kind = current.kind;
    const runsOn = (s: Scenario): boolean => (s.brokers ? s.brokers.includes(kind) : kind !== 'sentinel' && kind !== 'rabbit-cluster');
    // The Redis Cluster's smoke is three of its faults, to keep CI short; `--broker redis-cluster` runs them all.
    const inSmoke = (s: Scenario): boolean => kind !== 'redis-cluster' || !smoke || wanted !== undefined || CLUSTER_SMOKE.includes(s.name);
    for (const scenario of scenarios.filter((s) => runsOn(s) && inSmoke(s))) {
      const started = Date.now();
      const result = await runScenario(scenario, current, smoke).catch(
        (error: unknown): ScenarioResult => ({
          scenario: scenario.name,
          broker: current!.kind,
          sent: 0,
          finished: 0,
          lost: 0,
          duplicates: 0,
          inFlight: 0,
          resumeMs: null,
          maxRssMiB: 0,
          workerAlive: false,
          passed: false,
          note: error instanceof Error ? error.message : String(error),
        }),
      );
      results.push(result);
      console.log(
        `${result.passed ? 'pass' : 'FAIL'} ${scenario.name} on ${result.broker}: ${result.sent} tasks, ${result.lost} lost, ` +
          `${result.duplicates} duplicate runs (${result.inFlight} in flight), ${((Date.now() - started) / 1000).toFixed(1)} s${result.note ? ` — ${result.note}` : ''}`,
      );
    }
    await current.destroy();
    current = undefined;
  }
} finally {
  await cleanUp();
}

console.log(`\n${resultTable(results)}`);
if (!smoke && !wanted && !values.broker) {
  const path = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
  writeFileSync(path, resultsDocument(results, scenarios, smoke));
  console.log(`\nwrote ${path}`);
}
const failed = results.filter((r) => !r.passed).length;
console.log(`\n${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
