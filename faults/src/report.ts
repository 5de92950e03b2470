import { cpus } from 'node:os';
import type { ScenarioResult } from './runner';
import type { Scenario } from './scenario';

/** The results as a markdown table, one row per scenario and broker. */
export function resultTable(results: readonly ScenarioResult[]): string {
  const rows = results.map((r) =>
    [
      r.scenario,
      ({ redis: 'Redis', amqp: 'RabbitMQ', postgres: 'PostgreSQL', sentinel: 'Redis Sentinel', 'rabbit-cluster': 'RabbitMQ cluster (3 nodes, quorum queue)', 'redis-cluster': 'Redis Cluster (3 masters)' } as Record<string, string>)[r.broker] ?? r.broker,
      r.sent,
      r.lost,
      r.duplicates,
      r.inFlight,
      r.resumeMs === null ? '—' : `${(r.resumeMs / 1000).toFixed(2)} s`,
      r.maxRssMiB,
      r.passed ? 'pass' : `**FAIL**${r.note ? ` (${r.note})` : ''}`,
    ].join(' | '),
  );
  return [
    '| scenario | broker | tasks | lost | duplicate runs | in flight at the fault | time to resume | worker RSS (MiB) | verdict |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ].join('\n');
}

/** faults/RESULTS.md: when and where, the table, and what each scenario did. */
export function resultsDocument(results: readonly ScenarioResult[], scenarios: readonly Scenario[], smoke: boolean): string {
  const ran = new Set(results.map((r) => r.scenario));
  return [
    '# kq fault suite: results',
    '',
    `${smoke ? 'Smoke run' : 'Full run'} of \`pnpm faults${smoke ? ':smoke' : ''}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
      `Node ${process.version}, ${cpus().length} CPUs. Private Redis (AOF, fsync always), RabbitMQ, PostgreSQL (fsync on), Redis Sentinel, three-node RabbitMQ cluster and three-master Redis Cluster setups; acks-late tasks.`,
    '',
    resultTable(results),
    '',
    'A scenario passes when no task is lost, the worker is up at the end, and duplicate runs are at most the tasks in',
    'flight at the fault: started and not yet acked (acks late: a task cut off mid-run, or finished with its ack not yet',
    'at the broker, runs again; nothing else may).',
    '',
    ...scenarios.filter((s) => ran.has(s.name)).map((s) => `- **${s.name}**: ${s.description}.`),
    '',
  ].join('\n');
}
