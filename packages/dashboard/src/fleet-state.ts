import type { DelayedCount } from '@kq/core';
import { ClusterState, type ClusterTask, type ReceivedEvent } from '@kq/worker';
import { FlowerMetrics } from './flower-metrics';
import { flowerTask, queryTasks, queryableClusterTask, type FlowerTask, type QueryableTask, type TaskQuery } from './task-view';
import { QueueLengthSeries, ThroughputSeries } from './time-series';

/** A beat's schedule as its leader announced it (`beat-schedule` events). */
export interface BeatSchedule {
  group: string;
  /** The leader's node name. */
  hostname: string;
  epoch: number;
  /** When it was announced, epoch seconds. */
  at: number;
  entries: Array<{ name: string; task: string; schedule: string; enabled: boolean; last_run: number | null; next_run: number | null }>;
}

/** What the workers answered to Flower's inspect calls, by worker: `stats`, `active_queues`, ... and `timestamp`. */
export type InspectedWorker = Record<string, unknown>;

export interface FleetStateOptions {
  /** Tasks kept, least recently seen dropped first (Flower's `max_tasks`, 100 000). */
  maxTasks?: number;
}

/**
 * Everything the dashboard knows about the fleet, kq and Python workers alike: Celery's event state (workers by
 * heartbeat, tasks merged from their events), each task's children, what the workers last answered to inspect
 * calls, throughput and runtime per second, queue lengths over time, and Flower's Prometheus metrics.
 */
export class FleetState {
  readonly cluster: ClusterState;
  readonly metrics = new FlowerMetrics();
  readonly throughput = new ThroughputSeries(600);
  readonly queueLengths = new QueueLengthSeries(360);
  /** Flower's `application.workers`. */
  readonly inspected = new Map<string, InspectedWorker>();
  /** Ready messages per priority step, by queue, from the last sample (virtual transports; none on AMQP). */
  queueSteps: Readonly<Record<string, ReadonlyArray<{ step: number; messageCount: number }>>> = {};
  /**
   * ETA/countdown messages the broker holds (Redis's delayed set, RabbitMQ's delay ladder), from the last sample;
   * null where the transport cannot count them.
   */
  delayed: DelayedCount | null = null;
  /** Beat schedules by group, from their leaders' announcements. */
  readonly beats = new Map<string, BeatSchedule>();
  /** Events by worker and type (Flower's `state.counter`): processed/failed/retried counts per worker. */
  readonly counter = new Map<string, Map<string, number>>();
  readonly #children = new Map<string, Set<string>>();
  /** Bumped on every event: the live view sends an update only when something changed. */
  version = 0;

  constructor(options: FleetStateOptions = {}) {
    this.cluster = new ClusterState({ maxTasks: options.maxTasks ?? 100_000 });
  }

  event(event: ReceivedEvent): void {
    if (event.type === 'beat-schedule') {
      this.#beat(event);
      return;
    }
    this.cluster.event(event);
    this.version++;
    const byType = this.counter.get(event.hostname) ?? new Map<string, number>();
    byType.set(event.type, (byType.get(event.type) ?? 0) + 1);
    this.counter.set(event.hostname, byType);
    const uuid = typeof event['uuid'] === 'string' ? event['uuid'] : undefined;
    const task = uuid ? this.cluster.tasks.get(uuid) : undefined;
    const parent = event['parent_id'];
    if (uuid && typeof parent === 'string' && parent) {
      const siblings = this.#children.get(parent) ?? new Set<string>();
      siblings.add(uuid);
      this.#children.set(parent, siblings);
      if (this.#children.size > this.cluster.maxTasks * 2) this.#pruneChildren();
    }
    if (event.type === 'task-succeeded' || event.type === 'task-failed') {
      const runtime = typeof event['runtime'] === 'number' ? event['runtime'] : null;
      this.throughput.record(event.type === 'task-succeeded' ? 'succeeded' : 'failed', event.timestamp, runtime);
    }
    this.metrics.event(event, task);
  }

  #beat(event: ReceivedEvent): void {
    const group = event['group'];
    const entries = event['entries'];
    if (typeof group !== 'string' || !Array.isArray(entries)) return;
    const epoch = typeof event['epoch'] === 'number' ? event['epoch'] : 0;
    // A deposed leader's late announcement must not replace its successor's.
    const known = this.beats.get(group);
    if (known && known.epoch > epoch) return;
    this.beats.set(group, { group, hostname: event.hostname, epoch, at: event.timestamp, entries: entries as BeatSchedule['entries'] });
    this.version++;
  }

  /** One task in Flower's shape, or undefined when no event named it. */
  task(uuid: string): FlowerTask | undefined {
    const task = this.cluster.tasks.get(uuid);
    return task ? flowerTask(task, this.#childrenOf(uuid)) : undefined;
  }

  /** Flower's `/api/tasks`: the tasks that match, most recently seen first unless sorted, in Flower's shape. */
  queryTasks(query: TaskQuery = {}): FlowerTask[] {
    return queryTasks(this.#newestFirst(), query).map((task) => flowerTask(task.task, this.#childrenOf(task.uuid)));
  }

  /** Tasks newest first (by when the state first saw them), read lazily so a full page stops the walk. */
  *#newestFirst(): Generator<QueryableTask & { task: ClusterTask }> {
    const tasks = [...this.cluster.tasks.values()];
    for (let i = tasks.length - 1; i >= 0; i--) {
      const task = tasks[i] as ClusterTask;
      yield Object.assign(queryableClusterTask(task), { task });
    }
  }

  /** Task names seen (Flower's `task-types`). */
  taskTypes(): string[] {
    const names = new Set<string>();
    for (const task of this.cluster.tasks.values()) if (task.name) names.add(task.name);
    return [...names].sort();
  }

  /** Queues the workers said they consume (from `active_queues`), by name. */
  activeQueueNames(): string[] {
    const names = new Set<string>();
    for (const info of this.inspected.values()) {
      const queues = info['active_queues'];
      if (Array.isArray(queues)) for (const queue of queues) if (queue && typeof queue === 'object' && typeof (queue as { name?: unknown }).name === 'string') names.add((queue as { name: string }).name);
    }
    return [...names].sort();
  }

  /** Drops the child lists of parents the bounded state no longer holds. */
  #pruneChildren(): void {
    for (const parent of this.#children.keys()) if (!this.cluster.tasks.has(parent)) this.#children.delete(parent);
  }

  #childrenOf(uuid: string): string[] {
    const children = this.#children.get(uuid);
    if (!children) return [];
    // Forget children whose tasks were dropped (bounded state): the index never outgrows the tasks it points at.
    for (const child of children) if (!this.cluster.tasks.has(child)) children.delete(child);
    return [...children];
  }
}
