/**
 * `pnpm faults` runs every scenario on private Redis and RabbitMQ nodes and writes faults/RESULTS.md;
 * `pnpm faults:smoke` runs the short CI subset and exits non-zero on any failure.
 * Options: `--smoke`, `--broker redis|amqp`, `--scenario <name>[,<name>]`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BrokerNode } from './brokers/broker-node';
import { RabbitNode } from './brokers/rabbit-node';
import { RedisNode } from './brokers/redis-node';
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
    for (const scenario of scenarios) {
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
if (!smoke && !wanted) {
  const path = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
  writeFileSync(path, resultsDocument(results, scenarios, smoke));
  console.log(`\nwrote ${path}`);
}
const failed = results.filter((r) => !r.passed).length;
console.log(`\n${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
