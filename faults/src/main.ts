/**
 * `pnpm faults` runs every scenario on private Redis and RabbitMQ nodes and writes faults/RESULTS.md;
 * `pnpm faults:smoke` runs the short CI subset and exits non-zero on any failure.
 * Options: `--smoke`, `--broker redis|amqp|postgres|sentinel|rabbit-cluster`, `--scenario <name>[,<name>]`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BrokerNode } from './brokers/broker-node';
import { PostgresNode } from './brokers/postgres-node';
import { RabbitCluster } from './brokers/rabbit-cluster';
import { RabbitNode } from './brokers/rabbit-node';
import { RedisNode } from './brokers/redis-node';
import { SentinelNode } from './brokers/sentinel-node';
import { resultTable, resultsDocument } from './report';
import { runScenario, type ScenarioResult } from './runner';
import { SCENARIOS } from './scenario';

const { values } = parseArgs({ options: { smoke: { type: 'boolean' }, broker: { type: 'string' }, scenario: { type: 'string' } } });
const smoke = values.smoke ?? false;
const wanted = values.scenario?.split(',');
const scenarios = SCENARIOS.filter((s) => (wanted ? wanted.includes(s.name) : !smoke || s.smoke));
const brokers: Array<() => BrokerNode> = [];
if (!values.broker || values.broker === 'redis') brokers.push(() => new RedisNode(16_390 + Math.floor(Math.random() * 200)));
if (!values.broker || values.broker === 'amqp') brokers.push(() => new RabbitNode(15_810 + Math.floor(Math.random() * 80)));
if (!values.broker || values.broker === 'postgres') brokers.push(() => new PostgresNode(15_440 + Math.floor(Math.random() * 80)));
if (!values.broker || values.broker === 'sentinel') brokers.push(() => new SentinelNode(16_600 + 5 * Math.floor(Math.random() * 40)));
// Not in the smoke run: three RabbitMQ nodes take a minute to start and cluster.
if ((!values.broker && !smoke) || values.broker === 'rabbit-cluster') brokers.push(() => new RabbitCluster(15_900 + 3 * Math.floor(Math.random() * 30)));

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
    console.log(`starting a private ${current.kind} node at ${current.url.replace(/\/\/[^@]*@/, '//')}`);
    await current.start();
    const kind = current.kind;
    for (const scenario of scenarios.filter((s) => (s.brokers ? s.brokers.includes(kind) : kind !== 'sentinel' && kind !== 'rabbit-cluster'))) {
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
