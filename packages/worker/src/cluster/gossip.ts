import { KqError, LamportClock, TypedEmitter, type Delivery } from '@kq/core';
import { ClusterState, type ClusterWorker } from '../events/cluster-state';
import type { EventDispatcher } from '../events/event-dispatcher';
import { EventReceiver, prepareEvent } from '../events/event-receiver';
import { isEventLike } from '../events/event';
import type { WorkerStep } from '../worker/bootstep';
import type { Worker } from '../worker/worker';
import type { ClusterContext } from './cluster-context';
import { heapPush, type ElectionEntry } from './election-heap';

/** Celery's default interval between checks for lost workers, seconds. */
export const DEFAULT_GOSSIP_INTERVAL = 5.0;

/** Runs the action of an election this worker won, by topic. */
export type ElectionHandler = (action: unknown) => void | Promise<void>;

export type GossipEvents = {
  /** A worker appeared or came back online. */
  'node-join': [worker: ClusterWorker];
  /** A worker said it went offline. */
  'node-leave': [worker: ClusterWorker];
  /** A worker stopped sending heartbeats (found by the periodic check). */
  'node-lost': [worker: ClusterWorker];
  /** An election finished: `leader` is `hostname.pid` of the winner. */
  elected: [id: string, leader: string, topic: string, won: boolean];
};

export interface GossipOptions {
  /** Seconds between checks for workers whose heartbeat expired. Default 5. */
  interval?: number;
  /** `x-message-ttl` of the gossip queue in seconds: the heartbeat interval when given, else 5 (Celery's rule). */
  queueTtl?: number;
  /** Milliseconds an election waits for every live peer's request before deciding with what it has. Default 5000. */
  electionTimeout?: number;
}

/**
 * Celery's `Gossip`: follows the other workers through their `worker.*` events (its own queue bound with
 * `worker.#`), which keeps the app clock in step with theirs, tells who is alive by the heartbeat rule, and runs
 * elections. Own events only move the clock forward. Every 5 s, workers whose heartbeat expired are reported lost and
 * forgotten; the worker itself is never among `aliveWorkers()`.
 *
 * Elections: Python's leader choice (`LamportClock.sort_heap`) crashes a worker whose heap holds a single request
 * (docs/wire.md#mingle-heartbeats-and-gossip). A kq worker with no live peer decides alone without sending anything,
 * and one with peers waits for all their requests before deciding, so it never decides on a single entry while others
 * take part.
 */
export class Gossip extends TypedEmitter<GossipEvents> {
  readonly worker: Worker;
  readonly hostname: string;
  /** `hostname.pid`: how elections name this worker. */
  readonly fullHostname: string;
  readonly state = new ClusterState({ maxTasks: 1 });
  readonly clock: LamportClock;
  readonly electionHandlers = new Map<string, ElectionHandler>();
  readonly #dispatcher: EventDispatcher | undefined;
  readonly #options: GossipOptions;
  readonly #requests = new Map<string, ElectionEntry[]>();
  readonly #replies = new Map<string, string[]>();
  readonly #deadlines = new Map<string, NodeJS.Timeout>();
  #receiver: EventReceiver | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(worker: Worker, dispatcher: EventDispatcher | undefined, options: GossipOptions = {}) {
    super();
    this.worker = worker;
    this.hostname = worker.hostname;
    this.fullHostname = `${worker.hostname}.${process.pid}`;
    this.clock = worker.app.clock;
    this.#dispatcher = dispatcher;
    this.#options = options;
    this.electionHandlers.set('task', (action) => this.#callTask(action));
    this.state.on('node-join', (w) => {
      worker.log.debug(`${w.hostname} joined the party`);
      this.emit('node-join', w);
    });
    this.state.on('node-leave', (w) => {
      worker.log.debug(`${w.hostname} left`);
      this.emit('node-leave', w);
    });
  }

  async start(): Promise<void> {
    const { app } = this.worker;
    const receiver = new EventReceiver(app.connection, {
      routingKey: 'worker.#',
      clock: this.clock,
      exchange: app.conf.eventExchange,
      queueTtl: this.#options.queueTtl ?? 5,
      localize: false,
      onMessage: (body, delivery) => this.onMessage(body, delivery),
    });
    receiver.on('error', (error) => this.worker.log.warning(`gossip: ${error.message}`));
    this.#receiver = receiver;
    await receiver.start();
    this.#timer = setInterval(() => this.periodic(), (this.#options.interval ?? DEFAULT_GOSSIP_INTERVAL) * 1000);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const timer of this.#deadlines.values()) clearTimeout(timer);
    this.#deadlines.clear();
    const receiver = this.#receiver;
    this.#receiver = undefined;
    await receiver?.close();
  }

  /** Peers whose heartbeat has not expired. */
  aliveWorkers(now?: number): ClusterWorker[] {
    return this.state.aliveWorkers(now);
  }

  /** One message from the gossip queue (Celery's `Gossip.on_message`). Never throws. */
  onMessage(body: unknown, delivery: Delivery): void {
    const routingKey = delivery.deliveryInfo.routingKey;
    // With fanout_patterns off, Redis hands every event to every subscriber: task events are not ours to read.
    if (routingKey.split('.', 1)[0] === 'task') return;
    const events = Array.isArray(body) ? body : [body];
    for (const raw of events) {
      if (!isEventLike(raw)) continue;
      try {
        if (routingKey === 'worker.elect') this.onElect(raw);
        else if (routingKey === 'worker.elect.ack') this.onElectAck(raw);
        else this.#workerEvent(raw, delivery);
      } catch (error) {
        this.worker.log.error(`gossip: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Forgets workers whose heartbeat expired, reporting each as lost (Celery's `periodic`). */
  periodic(now?: number): void {
    for (const worker of [...this.state.workers.values()]) {
      if (worker.isAlive(now)) continue;
      this.worker.log.info(`missed heartbeat from ${worker.hostname}`);
      this.state.workers.delete(worker.hostname);
      this.emit('node-lost', worker);
    }
  }

  /**
   * Starts an election (the `election` control command): every live worker that got the command announces itself
   * with `worker-elect`, everybody acknowledges, and the request with the lowest clock wins. Alone, this worker wins
   * at once without sending anything.
   */
  election(id: string, topic: string, action: unknown = null): void {
    if (this.aliveWorkers().length === 0) {
      this.worker.log.info(`I won the election ${JSON.stringify(id)} (no other worker is alive)`);
      this.emit('elected', id, this.fullHostname, topic, true);
      this.#runElected(id, topic, action);
      return;
    }
    this.#replies.set(id, []);
    this.#dispatcher?.send('worker-elect', { id, topic, action, cver: 1 });
  }

  /** A `worker-elect` from any worker (this one included): record the request and acknowledge it. */
  onElect(event: Record<string, unknown>): void {
    const { id, clock, hostname, pid, topic, action } = event;
    if (typeof id !== 'string' || typeof clock !== 'number' || typeof hostname !== 'string' || typeof topic !== 'string' || !('pid' in event)) {
      throw new KqError(`election request missing field: ${JSON.stringify(event).slice(0, 200)}`);
    }
    let heap = this.#requests.get(id);
    if (!heap) {
      heap = [];
      this.#requests.set(id, heap);
    }
    heapPush(heap, [clock, `${hostname}.${String(pid)}`, topic, action ?? null]);
    this.#dispatcher?.send('worker-elect-ack', { id });
    this.#maybeDecide(id);
  }

  /**
   * A `worker-elect-ack`. Celery decides once it has as many acks as live peers, even if the heap holds only its own
   * request — the case that crashes Python. This waits until every live peer's request is in too, or until
   * `electionTimeout` passes, then decides the way Python does (`LamportClock.sort_heap`).
   */
  onElectAck(event: Record<string, unknown>): void {
    const id = event['id'];
    if (typeof id !== 'string') return;
    const replies = this.#replies.get(id);
    if (!replies) return; // not an election this worker started
    replies.push(String(event['hostname']));
    this.#maybeDecide(id);
  }

  #maybeDecide(id: string, force = false): void {
    const replies = this.#replies.get(id);
    if (!replies) return;
    const peers = this.aliveWorkers().length;
    const heap = this.#requests.get(id) ?? [];
    if (!force && (replies.length < peers || heap.length < peers + 1)) {
      if (!this.#deadlines.has(id)) {
        const timer = setTimeout(() => this.#maybeDecide(id, true), this.#options.electionTimeout ?? 5000);
        timer.unref();
        this.#deadlines.set(id, timer);
      }
      return;
    }
    clearTimeout(this.#deadlines.get(id));
    this.#deadlines.delete(id);
    this.#requests.delete(id);
    this.#replies.delete(id);
    const winner = LamportClock.sortHeap(heap);
    if (!winner) return;
    const [, leader, topic, action] = winner;
    const won = leader === this.fullHostname;
    this.worker.log.info(won ? `I won the election ${JSON.stringify(id)}` : `node ${leader} elected for ${JSON.stringify(id)}`);
    this.emit('elected', id, leader, topic, won);
    if (won) this.#runElected(id, topic, action);
  }

  #workerEvent(raw: Record<string, unknown> & { type: string }, delivery: Delivery): void {
    const hostname = typeof delivery.headers['hostname'] === 'string' && delivery.headers['hostname'] !== '' ? delivery.headers['hostname'] : raw['hostname'];
    if (hostname === this.hostname) {
      this.clock.forward();
      return;
    }
    const event = prepareEvent(raw, this.clock, { localize: false });
    this.state.event(event);
  }

  #runElected(id: string, topic: string, action: unknown): void {
    const handler = this.electionHandlers.get(topic);
    if (!handler) {
      this.worker.log.error(`Unknown election topic ${JSON.stringify(topic)} (election ${JSON.stringify(id)})`);
      return;
    }
    Promise.resolve()
      .then(() => handler(action))
      .catch((error: unknown) => this.worker.log.error(`election ${JSON.stringify(id)}: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** The `task` topic: the action is a signature to send. */
  async #callTask(action: unknown): Promise<void> {
    if (!action || typeof action !== 'object') throw new KqError(`Could not call task: ${JSON.stringify(action)} is not a signature`);
    const { task, args, kwargs } = action as { task?: unknown; args?: unknown; kwargs?: unknown };
    if (typeof task !== 'string') throw new KqError(`Could not call task: the signature has no task name`);
    await this.worker.app.sendTask(task, Array.isArray(args) ? args : [], kwargs && typeof kwargs === 'object' ? (kwargs as Record<string, unknown>) : {});
  }
}

/** The Gossip consumer step; on by default when the broker has fanout (Celery: amqp and redis). */
export class GossipStep implements WorkerStep {
  readonly name = 'Gossip';
  readonly #context: ClusterContext;
  #gossip: Gossip | undefined;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  get gossip(): Gossip | undefined {
    return this.#gossip;
  }

  async start(worker: Worker): Promise<void> {
    if (!this.#context.owns(worker) || this.#context.options.gossip === false) return;
    const transport = await worker.app.connection.transport();
    if (!transport.capabilities.fanout) return;
    const { heartbeatInterval, gossipInterval } = this.#context.options;
    const gossip = new Gossip(worker, this.#context.dispatcher, {
      ...(gossipInterval === undefined ? {} : { interval: gossipInterval }),
      ...(heartbeatInterval === undefined ? {} : { queueTtl: heartbeatInterval }),
    });
    try {
      await gossip.start();
    } catch (error) {
      // Following the others is not worth refusing to run tasks over: carry on without it, loudly.
      worker.log.error(`gossip: could not start, running without it: ${error instanceof Error ? error.message : String(error)}`);
      await gossip.stop().catch(() => undefined);
      return;
    }
    this.#gossip = gossip;
    this.#context.gossip = gossip;
  }

  async stop(): Promise<void> {
    const gossip = this.#gossip;
    this.#gossip = undefined;
    await gossip?.stop();
  }
}
