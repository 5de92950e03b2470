// Redis Cluster drain throughput (issue #24): the same queues and workers, with the queues on one shard vs spread over
// three, on a private 3-master cluster this script starts (ports 17000–17099) and removes.
//
//   pnpm bench:cluster                       (builds first; N = 30 000 tasks over 3 queues, 3 runs per layout)
//   cd bench && pnpm exec tsx src/redis-cluster-bench.ts [--n=30000] [--runs=3] [--queues=3] [--concurrency=100]
//
// Per layout and run: the queues are filled (untimed) by kq's bench runner, then one kq worker process per queue
// (the W2 runner: App + worker, concurrency 100, acks late) drains its queue; all start on one GO. Aggregate
// throughput = tasks / (GO → the last worker's last ack). The queue names are picked by their hash slot: all on the
// master of one shard, or one per master. Redis CPU per node (INFO's used_cpu_*) shows where the work went.
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { keySlot } from '@kq/redis';
import { startRedisCluster, type RedisClusterProcesses } from '@kq/test-harness/redis-cluster';
import type { DrainResult, RunnerSpec } from './protocol';
import { RunnerProcess, installExitHooks } from './runner-process';
import { runnerCommand } from './systems';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key as string, value ?? 'true'];
  }),
);
const N = Number(args.get('n') ?? 30_000);
const RUNS = Number(args.get('runs') ?? 3);
const QUEUES = Number(args.get('queues') ?? 3);
const CONCURRENCY = Number(args.get('concurrency') ?? 100);
const TIMEOUT_MS = 300_000;

type Layout = 'one shard' | 'three shards';

interface RunFigures {
  perSecond: number;
  /** Redis CPU per node during the drain, ms (user + sys), by client port. */
  redisCpuMs: Map<number, number>;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** `count` queue names whose `{queue}` slot is served by the master on `port` (or, with no port, one per master). */
async function pickQueues(cluster: RedisClusterProcesses, run: string, layout: Layout): Promise<string[]> {
  const target = cluster.ports[0] as number;
  const byMaster = new Map<number, string[]>();
  const picked: string[] = [];
  for (let index = 0; picked.length < QUEUES; index++) {
    const name = `kqbench.cluster.${run}.${index}`;
    const port = await cluster.portOfSlot(keySlot(`{${name}}`));
    const mine = byMaster.get(port) ?? [];
    if (layout === 'one shard' ? port === target : mine.length < Math.ceil(QUEUES / cluster.ports.length)) {
      mine.push(name);
      byMaster.set(port, mine);
      picked.push(name);
    }
  }
  return picked;
}

function spec(cluster: RedisClusterProcesses, role: 'fill' | 'drain', queue: string, n: number): RunnerSpec {
  return { role, broker: 'redis', url: cluster.url, backend: null, queue, n, mode: 'bulk', concurrency: CONCURRENCY, batch: 1000, variant: null, timeoutMs: TIMEOUT_MS };
}

async function redisCpuMs(cluster: RedisClusterProcesses): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const port of cluster.ports) {
    const info = await cluster.cli(port, 'INFO', 'CPU');
    const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? 0);
    const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? 0);
    out.set(port, (user + sys) * 1000);
  }
  return out;
}

async function runOnce(cluster: RedisClusterProcesses, layout: Layout, run: number): Promise<RunFigures> {
  const queues = await pickQueues(cluster, `${randomUUID().slice(0, 6)}`, layout);
  const perQueue = Math.floor(N / queues.length);
  const runners: RunnerProcess[] = [];
  const start = (role: 'fill' | 'drain', queue: string): RunnerProcess => {
    const runner = RunnerProcess.start(runnerCommand('kq', spec(cluster, role, queue, perQueue), `kq ${role} ${queue}`));
    runners.push(runner);
    return runner;
  };
  try {
    const fillers = queues.map((queue) => start('fill', queue));
    const drainers = queues.map((queue) => start('drain', queue));
    await Promise.all(fillers.map((filler) => filler.result(TIMEOUT_MS)));
    const before = await redisCpuMs(cluster);
    const started = performance.now();
    for (const drainer of drainers) drainer.go();
    const results = (await Promise.all(drainers.map((drainer) => drainer.result(TIMEOUT_MS)))) as DrainResult[];
    const elapsedMs = performance.now() - started;
    const after = await redisCpuMs(cluster);
    for (const result of results) {
      if (result.distinct !== perQueue || result.processed !== perQueue) {
        throw new Error(`${layout} run ${run}: a worker ran ${result.processed} tasks (${result.distinct} distinct) of ${perQueue}`);
      }
    }
    const redisCpu = new Map([...after].map(([port, ms]) => [port, ms - (before.get(port) ?? 0)]));
    const perSecond = (perQueue * queues.length) / (elapsedMs / 1000);
    console.log(`  ${layout}, run ${run}: ${Math.round(perSecond).toLocaleString('en-US')} tasks/s (Redis CPU by node: ${[...redisCpu.values()].map((ms) => `${Math.round(ms)} ms`).join(', ')})`);
    return { perSecond, redisCpuMs: redisCpu };
  } finally {
    await Promise.all(runners.map((runner) => runner.stop()));
  }
}

async function main(): Promise<void> {
  installExitHooks();
  const cluster = await startRedisCluster();
  try {
    console.log(`Redis Cluster drain: ${N} tasks over ${QUEUES} queues, one kq worker process per queue (concurrency ${CONCURRENCY}), ${RUNS} runs per layout`);
    console.log(`cluster ${cluster.url}; ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}\n`);
    const figures = new Map<Layout, RunFigures[]>([
      ['one shard', []],
      ['three shards', []],
    ]);
    // Interleaved, so a burst of load from elsewhere on the machine lands on both layouts alike.
    for (let run = 1; run <= RUNS; run++) {
      for (const layout of figures.keys()) figures.get(layout)?.push(await runOnce(cluster, layout, run));
    }
    console.log('\n| layout | queues per master | aggregate drain, tasks/s (median) | runs | Redis CPU per node, ms (median run) |');
    console.log('|---|---|---|---|---|');
    for (const [layout, runs] of figures) {
      const rates = runs.map((r) => r.perSecond);
      const mid = runs.find((r) => r.perSecond === median(rates)) as RunFigures;
      const spread = layout === 'one shard' ? `${QUEUES}, 0, 0` : Array.from({ length: 3 }, (_, i) => Math.floor(QUEUES / 3) + (i < QUEUES % 3 ? 1 : 0)).join(', ');
      console.log(
        `| ${layout} | ${spread} | ${Math.round(median(rates)).toLocaleString('en-US')} | ${rates.map((rate) => Math.round(rate).toLocaleString('en-US')).join(' / ')} | ${[...mid.redisCpuMs.values()].map((ms) => Math.round(ms)).join(' / ')} |`,
      );
    }
  } finally {
    await cluster.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
