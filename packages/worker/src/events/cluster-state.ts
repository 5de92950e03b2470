import { BoundedMap, TypedEmitter, compareTimetuples } from '@kq/core';
import type { ReceivedEvent } from './event';

/** A worker is alive while `now < last heartbeat + freq × 200 %` (Celery's `HEARTBEAT_EXPIRE_WINDOW`). */
export const HEARTBEAT_EXPIRE_WINDOW = 200;
/** Seconds between an event's timestamp and its receipt beyond which host clocks are reported as out of sync. */
export const HEARTBEAT_DRIFT_MAX = 16;
/** Receive times kept per worker. */
const HEARTBEAT_MAX = 4;

/** The task state each task event stands for (Celery's `TASK_EVENT_TO_STATE`). */
export const TASK_EVENT_TO_STATE: Readonly<Record<string, string>> = {
  sent: 'PENDING',
  received: 'RECEIVED',
  started: 'STARTED',
  failed: 'FAILURE',
  retried: 'RETRY',
  succeeded: 'SUCCESS',
  revoked: 'REVOKED',
  rejected: 'REJECTED',
};

/** Celery's `states.PRECEDENCE`: a lower index is a later state; unknown states rank with `null`. */
const PRECEDENCE: readonly (string | null)[] = ['SUCCESS', 'FAILURE', null, 'REVOKED', 'STARTED', 'RECEIVED', 'REJECTED', 'RETRY', 'PENDING'];

/** Celery's `states.precedence(state)`. */
export function statePrecedence(state: string): number {
  const index = PRECEDENCE.indexOf(state);
  return index === -1 ? PRECEDENCE.indexOf(null) : index;
}

/**
 * What a late event may still contribute (Celery's `Task.merge_rules`): a `task-received` that arrives after the task
 * already started or finished only fills in these fields.
 */
const MERGE_RULES: Readonly<Record<string, readonly string[]>> = {
  RECEIVED: ['name', 'args', 'kwargs', 'parent_id', 'root_id', 'retries', 'eta', 'expires'],
};

/** A worker as seen through its events (Celery's `events.state.Worker`). */
export class ClusterWorker {
  readonly hostname: string;
  /** Receive times (seconds) of the last few heartbeats, oldest first. */
  readonly heartbeats: number[] = [];
  /** The last value of every field its events carried (`pid`, `freq`, `active`, `processed`, `loadavg`, `sw_*`...). */
  readonly fields: Record<string, unknown> = {};
  /** Called when a heartbeat's timestamp and receive time are more than `HEARTBEAT_DRIFT_MAX` seconds apart. */
  onDrift: ((worker: ClusterWorker, drift: number) => void) | undefined;

  constructor(hostname: string) {
    this.hostname = hostname;
  }

  get pid(): number | null {
    return typeof this.fields['pid'] === 'number' ? this.fields['pid'] : null;
  }

  /** Seconds between heartbeats it announced; 60 until it said (Celery's default). */
  get freq(): number {
    const freq = this.fields['freq'];
    return typeof freq === 'number' && freq > 0 ? freq : 60;
  }

  get clock(): number {
    return typeof this.fields['clock'] === 'number' ? this.fields['clock'] : 0;
  }

  get active(): number | null {
    return typeof this.fields['active'] === 'number' ? this.fields['active'] : null;
  }

  get processed(): number | null {
    return typeof this.fields['processed'] === 'number' ? this.fields['processed'] : null;
  }

  get loadavg(): readonly number[] | null {
    const value = this.fields['loadavg'];
    return Array.isArray(value) ? value.filter((n): n is number => typeof n === 'number') : null;
  }

  /** `hostname.pid`, what elections order by. */
  get id(): string {
    return `${this.hostname}.${this.pid ?? 'None'}`;
  }

  /** When the last heartbeat stops counting (seconds since the epoch), or undefined without heartbeats. */
  get heartbeatExpires(): number | undefined {
    const last = this.heartbeats[this.heartbeats.length - 1];
    return last === undefined ? undefined : last + this.freq * (HEARTBEAT_EXPIRE_WINDOW / 100);
  }

  /** Celery's liveness rule: a heartbeat was received and it has not expired. */
  isAlive(now: number = Date.now() / 1000): boolean {
    const expires = this.heartbeatExpires;
    return expires !== undefined && now < expires;
  }

  get status(): 'ONLINE' | 'OFFLINE' {
    return this.isAlive() ? 'ONLINE' : 'OFFLINE';
  }

  /**
   * Records one event (Celery's `Worker.event`): fields are copied; `offline` forgets the heartbeats; anything else
   * with both times counts as a heartbeat received at `localReceived`.
   */
  event(subject: string | null, timestamp: number | undefined, localReceived: number | undefined, fields?: Readonly<Record<string, unknown>>): void {
    if (fields) Object.assign(this.fields, fields);
    if (subject === 'offline') {
      this.heartbeats.length = 0;
      return;
    }
    if (!localReceived || !timestamp) return;
    const drift = Math.abs(Math.trunc(localReceived) - Math.trunc(timestamp));
    if (drift > HEARTBEAT_DRIFT_MAX) this.onDrift?.(this, drift);
    if (this.heartbeats.length > HEARTBEAT_MAX - 1) this.heartbeats.shift();
    const last = this.heartbeats[this.heartbeats.length - 1];
    if (last !== undefined && localReceived > last) this.heartbeats.push(localReceived);
    else insertSorted(this.heartbeats, localReceived);
  }
}

/** A task as seen through its events (Celery's `events.state.Task`). */
export class ClusterTask {
  readonly uuid: string;
  /** The merged fields of its events (name, args, kwargs, result, exception, runtime, retries, eta...). */
  readonly fields: Record<string, unknown> = {};
  /** Its events in Lamport order (clock, then timestamp, then origin). */
  readonly events: ReceivedEvent[] = [];
  state = 'PENDING';
  /** Who sent it (`task-sent`'s hostname), when known. */
  client: string | null = null;
  /** The worker that handled it last. */
  worker: string | null = null;
  /** When each kind of event happened (`sent`, `received`, `started`, `succeeded`...): event timestamps. */
  readonly times: Record<string, number> = {};

  constructor(uuid: string) {
    this.uuid = uuid;
  }

  get name(): string | null {
    return typeof this.fields['name'] === 'string' ? this.fields['name'] : null;
  }

  get clock(): number {
    return typeof this.fields['clock'] === 'number' ? this.fields['clock'] : 0;
  }

  get timestamp(): number | null {
    return typeof this.fields['timestamp'] === 'number' ? this.fields['timestamp'] : null;
  }

  /** The event of a given subject (`received`, `succeeded`...), the latest one if there were several. */
  eventOf(subject: string): ReceivedEvent | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) if (this.events[i]?.type === `task-${subject}`) return this.events[i];
    return undefined;
  }

  /**
   * Merges one event (Celery's `Task.event`). An event whose state logically comes before the current one (a late
   * `task-received`) does not move the state back and only contributes the fields its merge rule keeps; RETRY is
   * never treated as out of order.
   */
  event(subject: string, event: ReceivedEvent): void {
    const known = TASK_EVENT_TO_STATE[subject];
    const state = known ?? subject.toUpperCase();
    if (known) this.times[subject] = event.timestamp;
    let fields: Record<string, unknown> = { ...event };
    if (state !== 'RETRY' && this.state !== 'RETRY' && statePrecedence(state) > statePrecedence(this.state)) {
      const keep = MERGE_RULES[state];
      if (keep) fields = Object.fromEntries(Object.entries(fields).filter(([key]) => keep.includes(key)));
    } else {
      this.state = state;
      fields['timestamp'] = event.timestamp;
    }
    Object.assign(this.fields, fields);
    insertByTime(this.events, event);
  }
}

export interface ClusterStateOptions {
  /** Tasks kept (least recently created dropped first). Default 10 000; gossip keeps 1. */
  maxTasks?: number;
  /** Workers kept. Default 5000. */
  maxWorkers?: number;
}

export type ClusterStateEvents = {
  /** A worker appeared (first event) or came online again. */
  'node-join': [worker: ClusterWorker];
  /** A worker went offline (`worker-offline`); it has been removed. */
  'node-leave': [worker: ClusterWorker];
  worker: [worker: ClusterWorker, event: ReceivedEvent];
  task: [task: ClusterTask, event: ReceivedEvent];
  /** Heartbeats from `worker` were stamped `drift` seconds away from their receipt: host clocks disagree. */
  drift: [worker: ClusterWorker, drift: number];
};

interface TimelineEntry {
  readonly clock: number;
  readonly timestamp: number;
  readonly origin: string;
  readonly task: ClusterTask;
}

/**
 * Celery's `events.State` for monitors: workers by hostname (alive by the heartbeat rule), tasks by id with Celery's
 * merge rules, and a timeline of task events ordered by Lamport clock. Feed it every event a receiver gives.
 */
export class ClusterState extends TypedEmitter<ClusterStateEvents> {
  readonly workers: Map<string, ClusterWorker>;
  readonly tasks: Map<string, ClusterTask>;
  eventCount = 0;
  /** Tasks received (`task-received` events). */
  taskCount = 0;
  readonly maxTasks: number;
  readonly maxWorkers: number;
  readonly #timeline: TimelineEntry[] = [];

  constructor(options: ClusterStateOptions = {}) {
    super();
    this.maxTasks = Math.max(1, options.maxTasks ?? 10_000);
    this.maxWorkers = Math.max(1, options.maxWorkers ?? 5000);
    this.workers = new BoundedMap(this.maxWorkers);
    this.tasks = new BoundedMap(this.maxTasks);
  }

  /** Applies one received event. Events of other groups are counted and otherwise ignored. */
  event(event: ReceivedEvent): void {
    this.eventCount++;
    const dash = event.type.indexOf('-');
    const group = dash === -1 ? event.type : event.type.slice(0, dash);
    const subject = dash === -1 ? '' : event.type.slice(dash + 1);
    if (group === 'worker') this.#workerEvent(subject, event);
    else if (group === 'task') this.#taskEvent(subject, event);
  }

  /** Workers whose heartbeat has not expired. */
  aliveWorkers(now: number = Date.now() / 1000): ClusterWorker[] {
    return [...this.workers.values()].filter((worker) => worker.isAlive(now));
  }

  /** Tasks, most recent event first (Celery's `tasks_by_time`). */
  tasksByTime(limit = Infinity): ClusterTask[] {
    const seen = new Set<ClusterTask>();
    for (let i = this.#timeline.length - 1; i >= 0 && seen.size < limit; i--) {
      const task = (this.#timeline[i] as TimelineEntry).task;
      if (this.tasks.get(task.uuid) === task) seen.add(task);
    }
    return [...seen];
  }

  clear(): void {
    this.workers.clear();
    this.tasks.clear();
    this.#timeline.length = 0;
    this.eventCount = 0;
    this.taskCount = 0;
  }

  #workerEvent(subject: string, event: ReceivedEvent): void {
    const { hostname, timestamp, local_received: localReceived } = event;
    if (typeof hostname !== 'string' || typeof timestamp !== 'number' || typeof localReceived !== 'number') return;
    const offline = subject === 'offline';
    let worker = this.workers.get(hostname);
    let created = false;
    if (!worker) {
      worker = this.#newWorker(hostname);
      if (!offline) {
        this.#storeWorker(worker);
        created = true;
      }
    }
    worker.event(subject, timestamp, localReceived, event);
    this.emit('worker', worker, event);
    if (created || subject === 'online') this.emit('node-join', worker);
    if (offline) {
      this.workers.delete(hostname);
      this.emit('node-leave', worker);
    }
  }

  #taskEvent(subject: string, event: ReceivedEvent): void {
    const uuid = event['uuid'];
    if (typeof uuid !== 'string') return;
    let task = this.tasks.get(uuid);
    if (!task) {
      task = new ClusterTask(uuid);
      this.tasks.set(uuid, task);
    }
    const hostname = typeof event.hostname === 'string' ? event.hostname : '';
    let origin = hostname;
    if (subject === 'sent') {
      task.client = hostname; // task-sent comes from the client, not a worker
    } else if (hostname !== '') {
      let worker = this.workers.get(hostname);
      if (!worker) {
        worker = this.#newWorker(hostname);
        this.#storeWorker(worker);
      }
      task.worker = hostname;
      // Celery passes (local_received, timestamp) in swapped positions here, so a task event counts as a heartbeat
      // received at the event's own timestamp. Kept so liveness matches Python monitors exactly.
      worker.event(null, event.local_received, event.timestamp);
      origin = worker.id;
    }
    this.#addToTimeline({ clock: event.clock, timestamp: event.timestamp, origin, task });
    if (subject === 'received') this.taskCount++;
    task.event(subject, event);
    this.emit('task', task, event);
  }

  #newWorker(hostname: string): ClusterWorker {
    const worker = new ClusterWorker(hostname);
    worker.onDrift = (w, drift) => this.emit('drift', w, drift);
    return worker;
  }

  #storeWorker(worker: ClusterWorker): void {
    this.workers.set(worker.hostname, worker);
  }

  #addToTimeline(entry: TimelineEntry): void {
    // Celery keeps max_tasks × 4 entries: about one per event of a task's usual life. Trimmed a quarter at a time:
    // shifting one entry per event moves the whole array each time, which a burst of events makes quadratic.
    const cap = this.maxTasks * 4;
    if (this.#timeline.length >= cap + Math.max(1, cap >> 2)) this.#timeline.splice(0, this.#timeline.length - cap + 1);
    const last = this.#timeline[this.#timeline.length - 1];
    if (!last || compareEntries(entry, last) > 0) this.#timeline.push(entry);
    else this.#timeline.splice(upperBound(this.#timeline, entry), 0, entry);
  }
}

function compareEntries(a: TimelineEntry, b: TimelineEntry): number {
  return compareTimetuples([a.clock, a.timestamp, a.origin], [b.clock, b.timestamp, b.origin]);
}

function upperBound(list: readonly TimelineEntry[], entry: TimelineEntry): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareEntries(entry, list[mid] as TimelineEntry) < 0) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function insertSorted(list: number[], value: number): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as number) > value) i--;
  list.splice(i, 0, value);
}

/** Keeps a task's events in Lamport order (clock, then timestamp, then sender). */
function insertByTime(events: ReceivedEvent[], event: ReceivedEvent): void {
  const key = (e: ReceivedEvent): [number, number, string] => [e.clock, e.timestamp, e.hostname];
  let i = events.length;
  while (i > 0 && compareTimetuples(key(events[i - 1] as ReceivedEvent), key(event)) > 0) i--;
  events.splice(i, 0, event);
}
