// One fleet measurement: N workers of one system on one broker, with the dashboard watching. Start-up, idle cost,
// ping and revoke round trips, and (optionally) how soon a SIGKILLed worker is seen gone by the dashboard and peers.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { App } from '@kq/worker';
import { processTreeCpuUs, processTreeRssBytes } from '../process-tree';
import { percentile } from '../stats';
import { Fleet, killOnExit, sleep, type FleetSystem } from './fleet-processes';
import type { BrokerCounters, CommandCost, FleetBroker } from './private-brokers';

const DASHBOARD_CLI = fileURLToPath(new URL('../../../packages/dashboard/dist/cli.js', import.meta.url));
/** Celery's heartbeat interval, seconds: failure detection is judged against three of them. */
export const HEARTBEAT_INTERVAL_S = 2;

export interface FleetRunOptions {
  system: FleetSystem;
  broker: FleetBroker;
  size: number;
  /** Seconds of idle measured once every worker is ready. */
  idleSeconds: number;
  /** Seconds waited between the last worker ready and the idle window (default 5: past Gossip's decisions). */
  settleSeconds?: number;
  /** Workers started together; the next batch waits for them to be ready. */
  batch: number;
  /** SIGKILL one worker after the idle window and time its detection. */
  failure: boolean;
  /** The dashboard's port; null runs the fleet without it. */
  dashboardPort: number | null;
  log: (line: string) => void;
}

export interface FleetRunResult {
  system: FleetSystem;
  broker: 'redis' | 'amqp';
  size: number;
  ready: number;
  /** Spawn to ready, per worker, ms. */
  startMedianMs: number;
  startMaxMs: number;
  /** Mingle's part of it (hello sent to ready), per worker, ms. */
  mingleMedianMs: number | null;
  mingleMaxMs: number | null;
  connectionsPerWorker: number;
  idleSeconds: number;
  brokerCpuPercent: number;
  /** Redis: commands/s; RabbitMQ: messages published/s. */
  receivedPerSecond: number;
  /** Redis: bytes sent/s; RabbitMQ: messages delivered/s. */
  sentPerSecond: number;
  workerCpuPercentEach: number;
  workerRssMbEach: number;
  dashboardCpuPercent: number | null;
  dashboardRssMb: number | null;
  pingMs: number | null;
  pingReplies: number;
  revokeMs: number | null;
  revokeReplies: number;
  failure: FailureResult | null;
  /** Redis: what each command cost over the idle window, most Redis time first (absent for RabbitMQ and older runs). */
  commandCosts?: CommandRate[];
}

/** One command's share of the idle window: calls and Redis's own microseconds in it, per second. */
export interface CommandRate {
  command: string;
  callsPerSecond: number;
  usecPerSecond: number;
}

export interface FailureResult {
  /** Kill to the dashboard's /api/workers?status=1 saying offline, ms (null: not within the wait). */
  dashboardMs: number | null;
  /** Peers whose log said the victim was lost within three heartbeat intervals of the kill, of all peers. */
  peersWithin3Intervals: number;
  peers: number;
  peersMedianMs: number | null;
}

export async function runFleet(options: FleetRunOptions): Promise<FleetRunResult> {
  const { system, broker, size, log } = options;
  const port = options.dashboardPort;
  const dashboard = port === null ? null : startDashboard(broker.url, port);
  const forgetDashboard = killOnExit(() => dashboard?.kill('SIGKILL'));
  const client = new App('fleet-bench', { broker: broker.url });
  const fleet = new Fleet({ system, brokerUrl: broker.url });
  try {
    if (port !== null) await waitForDashboard(port);
    await client.control.mailbox.broadcast('ping', { reply: true, timeout: 200 }); // the client's own connections
    const baseline = await broker.counters();
    log(`  starting ${size} ${system} workers on ${broker.kind}`);
    await fleet.start(size, options.batch);
    const ready = fleet.ready;
    const starts = ready.map((worker) => (worker.readyAt ?? 0) - worker.spawnedAt);
    const mingles = ready.filter((worker) => worker.mingleStartedAt !== undefined).map((worker) => (worker.readyAt ?? 0) - (worker.mingleStartedAt ?? 0));
    log(`  ${ready.length}/${size} ready (median ${Math.round(percentile(starts, 50))} ms from spawn); settling`);
    await sleep((options.settleSeconds ?? 5) * 1000);

    const before = await sample(broker, fleet, dashboard);
    await sleep(options.idleSeconds * 1000);
    const after = await sample(broker, fleet, dashboard);
    const seconds = (after.at - before.at) / 1000;
    const cpuPercent = (us: number): number => (us / 1e6 / seconds) * 100;

    const ping = await timedBroadcast(client, 'ping', {}, size);
    const revoke = await timedBroadcast(client, 'revoke', { task_id: randomUUID(), terminate: false, signal: 'SIGTERM' }, size);
    if (after.counters.commands) {
      const top = commandRates(before.counters.commands, after.counters.commands, seconds).slice(0, 6);
      log(`  Redis time per second by command: ${top.map((rate) => `${rate.command} ${rate.callsPerSecond.toFixed(1)}/s ${Math.round(rate.usecPerSecond)} µs`).join(', ')}`);
    }
    log(`  idle ${seconds.toFixed(1)} s; ping ${ping.replies} in ${ping.ms ?? '-'} ms; revoke ${revoke.replies} in ${revoke.ms ?? '-'} ms`);
    const failure = options.failure ? await killOne(fleet, port) : null;
    if (failure) log(`  kill: dashboard ${failure.dashboardMs ?? 'never'} ms; peers ${failure.peersWithin3Intervals}/${failure.peers} within 3 intervals`);

    return {
      system,
      broker: broker.kind,
      size,
      ready: ready.length,
      startMedianMs: percentile(starts, 50),
      startMaxMs: Math.max(...starts),
      mingleMedianMs: mingles.length > 0 ? percentile(mingles, 50) : null,
      mingleMaxMs: mingles.length > 0 ? Math.max(...mingles) : null,
      connectionsPerWorker: (after.counters.connections - baseline.connections) / size,
      idleSeconds: seconds,
      brokerCpuPercent: cpuPercent(after.brokerCpuUs - before.brokerCpuUs),
      receivedPerSecond: (after.counters.received - before.counters.received) / seconds,
      sentPerSecond: (after.counters.sent - before.counters.sent) / seconds,
      workerCpuPercentEach: cpuPercent(after.workersCpuUs - before.workersCpuUs) / size,
      workerRssMbEach: after.workersRss / size / 2 ** 20,
      dashboardCpuPercent: after.dashboardCpuUs === null || before.dashboardCpuUs === null ? null : cpuPercent(after.dashboardCpuUs - before.dashboardCpuUs),
      dashboardRssMb: after.dashboardRss === null ? null : after.dashboardRss / 2 ** 20,
      pingMs: ping.ms,
      pingReplies: ping.replies,
      revokeMs: revoke.ms,
      revokeReplies: revoke.replies,
      failure,
      ...(after.counters.commands ? { commandCosts: commandRates(before.counters.commands, after.counters.commands, seconds) } : {}),
    };
  } finally {
    await fleet.stop();
    dashboard?.kill('SIGKILL');
    forgetDashboard();
    await client.close().catch(() => undefined);
  }
}

function commandRates(before: ReadonlyMap<string, CommandCost> | undefined, after: ReadonlyMap<string, CommandCost>, seconds: number): CommandRate[] {
  const rates: CommandRate[] = [];
  for (const [command, cost] of after) {
    const earlier = before?.get(command) ?? { calls: 0, usec: 0 };
    const calls = cost.calls - earlier.calls;
    if (calls <= 0) continue;
    rates.push({ command, callsPerSecond: calls / seconds, usecPerSecond: (cost.usec - earlier.usec) / seconds });
  }
  return rates.sort((a, b) => b.usecPerSecond - a.usecPerSecond);
}

interface Sample {
  at: number;
  counters: BrokerCounters;
  brokerCpuUs: number;
  workersCpuUs: number;
  workersRss: number;
  dashboardCpuUs: number | null;
  dashboardRss: number | null;
}

async function sample(broker: FleetBroker, fleet: Fleet, dashboard: ChildProcess | null): Promise<Sample> {
  const brokerCpuUs = processTreeCpuUs(broker.pid()) ?? 0;
  const at = Date.now();
  const counters = await broker.counters();
  return {
    at,
    counters,
    brokerCpuUs,
    workersCpuUs: fleet.cpuUs(),
    workersRss: fleet.rssBytes(),
    dashboardCpuUs: dashboard ? processTreeCpuUs(dashboard.pid) : null,
    dashboardRss: dashboard ? processTreeRssBytes(dashboard.pid) : null,
  };
}

/** A broadcast with replies, timed until all `expected` nodes answered (null ms: some never did within 30 s). */
async function timedBroadcast(client: App, method: string, args: Record<string, unknown>, expected: number): Promise<{ ms: number | null; replies: number }> {
  const started = performance.now();
  let last = started;
  const replies = await client.control.mailbox.broadcast(method, {
    arguments: args,
    reply: true,
    limit: expected,
    timeout: 30_000,
    callback: () => {
      last = performance.now();
    },
  });
  return { ms: replies.length >= expected ? Math.round(last - started) : null, replies: replies.length };
}

async function killOne(fleet: Fleet, port: number | null): Promise<FailureResult> {
  const alive = fleet.ready;
  const victim = alive[Math.floor(alive.length / 2)];
  if (!victim) return { dashboardMs: null, peersWithin3Intervals: 0, peers: 0, peersMedianMs: null };
  const peers = alive.filter((worker) => worker !== victim);
  const killedAt = Date.now();
  fleet.kill(victim);
  let dashboardMs: number | null = null;
  const waitUntil = killedAt + HEARTBEAT_INTERVAL_S * 1000 * 6;
  while (Date.now() < waitUntil) {
    if (dashboardMs === null && port !== null) {
      const status = await fetchJson<Record<string, boolean>>(`http://127.0.0.1:${port}/api/workers?status=1`);
      if (status && status[victim.name] === false) dashboardMs = Date.now() - killedAt;
    }
    await sleep(250);
  }
  const seen = peers.map((peer) => peer.lostSeen.get(victim.name)).filter((at): at is number => at !== undefined).map((at) => at - killedAt);
  return {
    dashboardMs,
    peersWithin3Intervals: seen.filter((ms) => ms <= HEARTBEAT_INTERVAL_S * 3000).length,
    peers: peers.length,
    peersMedianMs: seen.length > 0 ? percentile(seen, 50) : null,
  };
}

function startDashboard(brokerUrl: string, port: number): ChildProcess {
  return spawn('node', ['--max-old-space-size=512', DASHBOARD_CLI, '-b', brokerUrl, '--port', String(port)], { stdio: 'ignore' });
}

async function waitForDashboard(port: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await fetchJson(`http://127.0.0.1:${port}/api/workers?status=1`)) return;
    await sleep(250);
  }
  throw new Error(`the dashboard did not answer on port ${port} within 60 s`);
}

async function fetchJson<T>(url: string): Promise<T | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.ok ? ((await response.json()) as T) : null;
  } catch {
    return null;
  }
}
