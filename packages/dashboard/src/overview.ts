import type { DashboardView } from './dashboard-view';
import type { BeatSchedule } from './fleet-state';
import type { ThroughputPoint } from './time-series';

/** One row of the workers page. */
export interface WorkerRow {
  hostname: string;
  online: boolean;
  /** Seconds since its last heartbeat was received (null: none yet). */
  heartbeatAge: number | null;
  /** `inspect stats`' pool: kind, size, and the autoscaler's range when it has one. */
  pool: { implementation: string | null; size: number | null; autoscale: { min: number; max: number } | null } | null;
  active: number | null;
  processed: number;
  failed: number;
  retried: number;
  load: readonly number[] | null;
  queues: string[];
  software: string | null;
}

/** What the UI draws: workers, throughput and runtime per second, queue lengths over time, task counts by state. */
export interface Overview {
  workers: WorkerRow[];
  throughput: ThroughputPoint[];
  queues: {
    names: string[];
    samples: Array<{ t: number; lengths: Readonly<Record<string, number>> }>;
    /** Per queue: messages waiting (last sample), the workers consuming it, and the ETA tasks they hold from it. */
    rows: Array<{
      name: string;
      messages: number | null;
      steps: ReadonlyArray<{ step: number; messageCount: number }> | null;
      consumers: string[];
      scheduled: number;
      /** ETA messages the broker holds for it; null where the broker counts them only all together (RabbitMQ). */
      delayed: number | null;
    }>;
    /** ETA messages the broker holds, all queues together (`byQueue`: whether rows have their share); null: it cannot say. */
    delayed: { total: number; byQueue: boolean } | null;
  };
  tasks: { total: number; byState: Record<string, number>; types: string[] };
  /** Periodic tasks, by beat group, as the leaders announced them. */
  beats: BeatSchedule[];
  events: number;
}

export function overview(dashboard: DashboardView, now: number = Date.now() / 1000): Overview {
  const { state } = dashboard;
  const names = new Set([...state.cluster.workers.keys(), ...state.inspected.keys()]);
  const workers = [...names].sort().map((hostname): WorkerRow => {
    const worker = state.cluster.workers.get(hostname);
    const info = state.inspected.get(hostname) ?? {};
    const stats = (info['stats'] ?? {}) as Record<string, unknown>;
    const pool = stats['pool'] as Record<string, unknown> | undefined;
    const autoscaler = stats['autoscaler'] as { min?: unknown; max?: unknown } | undefined;
    const counts = state.counter.get(hostname);
    const last = worker?.heartbeats.at(-1);
    const queues = Array.isArray(info['active_queues']) ? (info['active_queues'] as Array<{ name?: unknown }>).map((queue) => String(queue.name)) : [];
    const software = worker && typeof worker.fields['sw_ident'] === 'string' ? `${String(worker.fields['sw_ident'])} ${String(worker.fields['sw_ver'] ?? '')}`.trim() : null;
    return {
      hostname,
      online: worker?.isAlive(now) ?? false,
      heartbeatAge: last === undefined ? null : Math.max(0, now - last),
      pool: pool
        ? {
            implementation: typeof pool['implementation'] === 'string' ? pool['implementation'] : null,
            size: typeof pool['max-concurrency'] === 'number' ? pool['max-concurrency'] : null,
            autoscale: typeof autoscaler?.min === 'number' && typeof autoscaler.max === 'number' ? { min: autoscaler.min, max: autoscaler.max } : null,
          }
        : null,
      active: worker?.active ?? null,
      processed: counts?.get('task-succeeded') ?? 0,
      failed: counts?.get('task-failed') ?? 0,
      retried: counts?.get('task-retried') ?? 0,
      load: worker?.loadavg ?? null,
      queues,
      software,
    };
  });
  const byState: Record<string, number> = {};
  for (const task of state.cluster.tasks.values()) byState[task.state] = (byState[task.state] ?? 0) + 1;
  const samples = state.queueLengths.samples();
  const queueNames = [...new Set([...state.activeQueueNames(), ...samples.flatMap((sample) => Object.keys(sample.lengths))])].sort();
  const latest = state.queueLengths.latest();
  const delayedBy = state.delayed?.byQueue;
  const rows = queueNames.map((name) => ({
    name,
    messages: latest[name] ?? null,
    steps: state.queueSteps[name] ?? null,
    consumers: [] as string[],
    scheduled: 0,
    delayed: delayedBy ? (delayedBy[name] ?? 0) : null,
  }));
  const byName = new Map(rows.map((row) => [row.name, row]));
  for (const [hostname, info] of state.inspected) {
    const queues = Array.isArray(info['active_queues']) ? (info['active_queues'] as Array<{ name?: unknown }>) : [];
    for (const queue of queues) byName.get(String(queue.name))?.consumers.push(hostname);
    // ETA tasks a worker holds (`inspect scheduled`), by the queue their message came from
    const scheduled = Array.isArray(info['scheduled']) ? (info['scheduled'] as Array<{ request?: { delivery_info?: { routing_key?: unknown } } }>) : [];
    for (const entry of scheduled) {
      const row = byName.get(String(entry.request?.delivery_info?.routing_key));
      if (row) row.scheduled++;
    }
  }
  return {
    workers,
    throughput: state.throughput.points(now, 300),
    queues: { names: queueNames, samples, rows, delayed: state.delayed ? { total: state.delayed.total, byQueue: delayedBy !== undefined } : null },
    tasks: { total: state.cluster.tasks.size, byState, types: state.taskTypes() },
    beats: [...state.beats.values()].sort((a, b) => (a.group < b.group ? -1 : 1)),
    events: state.cluster.eventCount,
  };
}
