import { KqError, type LamportClock, TypedEmitter, type Delivery } from '@kq/core';
import { ClusterState, type ClusterWorker } from '../events/cluster-state';
import { EventDispatcher } from '../events/event-dispatcher';
import { EventReceiver, prepareEvent, type EventBinding } from '../events/event-receiver';
import { isEventLike, nowSeconds, type ReceivedEvent } from '../events/event';
import { SOFTWARE_INFO } from '../protocol/software-info';
import type { WorkerHost } from '../runtime/worker-host';
import { compareCodePoints } from './code-point-order';
import { Elections } from './elections';
import { isLostBurst } from './lost-burst';
import { DEFAULT_GOSSIP_INTERVAL, DEFAULT_GOSSIP_WATCHERS, WATCHING_NOTICE_INTERVALS, type ElectionHandler, type GossipEvents, type GossipOptions } from './gossip-options';
import { namedWatchers, type MingleHints } from './mingle-hints';
import { DEFAULT_HEARTBEAT_INTERVAL } from './heartbeat-interval';

export { DEFAULT_GOSSIP_INTERVAL, DEFAULT_GOSSIP_WATCHERS, WATCHING_NOTICE_INTERVALS } from './gossip-options';
export type { ElectionHandler, GossipEvents, GossipOptions } from './gossip-options';
export type { MingleHints } from './mingle-hints';

/** The longest a starting worker listens for the watchers before deciding whether to be one. */
const MAX_DECISION_MS = 3000;

/** The worker events every kq worker follows: few, whatever the fleet's size (heartbeats are left to the watchers). */
const FOLLOWED_EVENTS = ['worker.online', 'worker.offline', 'worker.elect', 'worker.elect.ack'] as const;

/**
 * kq's own exchange beside the event exchange (`celeryev.kq`), for what watchers tell the other kq workers: who
 * they are (`worker-watching`, every five heartbeat intervals), who stopped sending heartbeats (`worker-lost`) and who came
 * back (`worker-found`). Python workers and monitors never bind it, so they see exactly Celery's events.
 */
export function gossipNoticeExchange(eventExchange: string): string {
  return `${eventExchange}.kq`;
}

/**
 * Celery's `Gossip`: follows the other workers through their `worker.*` events, which keeps the app clock in step
 * with theirs, tells who is alive, and runs elections. Own events only move the clock forward. The worker itself is
 * never among `aliveWorkers()`.
 *
 * Celery binds every worker's gossip queue with `worker.#`, so each worker receives every other worker's heartbeat
 * (N workers, N² deliveries every 2 s). Here only the `watchers` kq workers with the lowest node names do: they judge
 * liveness by the heartbeat rule, report workers whose heartbeat expired (`worker-lost`, on kq's notice exchange) and
 * say every five heartbeat intervals that they watch. Every other kq worker binds online, offline and election events only;
 * for it a worker is alive from its first event (or Mingle reply) until it goes offline or a watcher reports it lost,
 * and a watcher is lost once its notices stop. A worker that knows of fewer than `watchers` live kq workers below its
 * name watches (a new worker does until it has heard of them). What workers send is unchanged: Python workers and
 * monitors see kq workers exactly as before.
 *
 * Elections are run as Celery runs them, without Python's single-request crash: see `Elections`.
 */
export class Gossip extends TypedEmitter<GossipEvents> {
  readonly worker: WorkerHost;
  readonly hostname: string;
  /** `hostname.pid`: how elections name this worker. */
  readonly fullHostname: string;
  readonly state = new ClusterState({ maxTasks: 1 });
  readonly clock: LamportClock;
  /** Election topics and what the winner does (`task`: send the signature in the action). */
  readonly electionHandlers: Map<string, ElectionHandler>;
  readonly #elections: Elections;
  readonly #dispatcher: EventDispatcher | undefined;
  readonly #options: GossipOptions;
  readonly #watchers: number;
  readonly #heartbeatInterval: number;
  /** Seconds between a watcher's `worker-watching` notices. */
  readonly #noticePeriod: number;
  /** Watchers heard from (their `worker-watching` notices), with when, while this worker is not one. */
  readonly #watchersSeen = new Map<string, { at: number; freq: number }>();
  /** Workers this watcher reported lost: a heartbeat from one of them is announced with `worker-found`. */
  readonly #reportedLost = new Set<string>();
  /** Workers heard again since the last check, announced together in one `worker-found`. */
  readonly #found = new Map<string, Record<string, unknown>>();
  /**
   * A watcher's: workers it first heard from since its last `worker-watching` notice, named in the next one. A worker
   * that became ready while another was still binding its Gossip queue is otherwise never known to that one (the
   * others follow no heartbeats), which then cannot tell it lost when the watchers report it.
   */
  readonly #joined = new Map<string, Record<string, unknown>>();
  /** When the last check ran (seconds), to notice that this process itself was not running. */
  #lastCheck = 0;
  /** When this watcher first found a burst of workers silent (seconds); it reports them a heartbeat interval later. */
  #doubtingSince: number | undefined;
  #receiver: EventReceiver | undefined;
  #heartbeatReceiver: EventReceiver | undefined;
  #notices: EventDispatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Seconds between a watcher's checks: at least two a heartbeat interval (set by `start`). */
  #watcherCheckPeriod = 1;
  #noticeTimer: NodeJS.Timeout | undefined;
  #watching = false;
  #watchingSince = 0;
  #watchChange: Promise<void> = Promise.resolve();
  #stopped = false;
  /** At start, for a heartbeat interval and a half (3 s at most): the watchers' notices have not all been heard yet. */
  #deciding = false;
  #decisionTimer: NodeJS.Timeout | undefined;

  constructor(worker: WorkerHost, dispatcher: EventDispatcher | undefined, options: GossipOptions = {}) {
    super();
    this.worker = worker;
    this.hostname = worker.hostname;
    this.fullHostname = `${worker.hostname}.${process.pid}`;
    this.clock = worker.app.clock;
    this.#dispatcher = dispatcher;
    this.#options = options;
    this.#watchers = options.watchers ?? DEFAULT_GOSSIP_WATCHERS;
    this.#heartbeatInterval = options.heartbeatInterval ?? DEFAULT_HEARTBEAT_INTERVAL;
    this.#noticePeriod = this.#heartbeatInterval * WATCHING_NOTICE_INTERVALS;
    this.#elections = new Elections(
      {
        fullHostname: this.fullHostname,
        log: worker.log,
        alivePeers: () => this.aliveWorkers().length,
        send: (type, fields) => this.#dispatcher?.send(type, fields),
        elected: (id, leader, topic, won) => this.emit('elected', id, leader, topic, won),
      },
      options.electionTimeout ?? 5000,
    );
    this.electionHandlers = this.#elections.handlers;
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

  /** True while this worker follows every heartbeat (one of the `watchers`). */
  get watching(): boolean {
    return this.#watching;
  }

  /** True in this worker's first moments, while it listens for the watchers before deciding whether to be one. */
  get deciding(): boolean {
    return this.#deciding;
  }

  /** True while heartbeats reach this worker: while it watches, and in its first moments while it decides whether to. */
  get followingHeartbeats(): boolean {
    return this.#heartbeatReceiver !== undefined;
  }

  /**
   * Starts following. `neighbours` are the nodes Mingle heard of (alive, until told otherwise), each with what is
   * known of it (`sw_ident: 'kq'` for the watchers named in Mingle's replies).
   */
  async start(neighbours: Iterable<[string, Record<string, unknown>]> = []): Promise<void> {
    const { app } = this.worker;
    const exchange = app.conf.eventExchange;
    const notices = gossipNoticeExchange(exchange);
    // Heartbeats come through a queue of their own, bound while this worker watches.
    const bindings: EventBinding[] = [...FOLLOWED_EVENTS.map((routingKey) => ({ routingKey })), { routingKey: 'worker.#', exchange: notices }];
    this.#receiver = this.#newReceiver(bindings);
    this.#notices = new EventDispatcher(app.connection, {
      hostname: this.hostname,
      clock: this.clock,
      exchange: notices,
      onError: (error) => this.worker.log.warning(`gossip: ${error.message}`),
    });
    // Declared, bound and consumed while the rest is set up (following heartbeats, while deciding, is a queue of its
    // own): round trips side by side rather than one after another.
    const receiving = this.#receiver.start();
    const now = nowSeconds();
    for (const [node, fields] of neighbours) {
      if (node === this.hostname) continue;
      this.#learn(node, { freq: this.#heartbeatInterval, ...fields }, now);
      // A watcher named by Mingle counts as heard from now: if it is gone, the other watchers report it, or its
      // notices stop.
      if (fields['sw_ident'] === SOFTWARE_INFO.sw_ident) this.#watchersSeen.set(node, { at: now, freq: this.#noticePeriod });
    }
    if (this.#watchers !== Infinity && this.#namedWatchersBelow() < this.#watchers) {
      // Mingle's replies named the watchers; a watcher also says so when it starts watching and every few intervals.
      // After one and a half heartbeat intervals (3 s at most) this worker decides whether it is one; one that heard
      // of no watcher watches until it does, rather than follow nobody. Meanwhile it follows heartbeats too, so its
      // clock meets the others' at once, as a Celery worker's does. One to which Mingle named enough watchers below
      // its name (the usual start in a running fleet) has nothing left to decide: what it would hear meanwhile can
      // only add kq workers below it, so it never follows heartbeats (in a fleet of 200 on RabbitMQ, each start
      // cost a queue, a binding and 300 heartbeats, and the round trips to set them up and take them down).
      this.#deciding = true;
      // setImmediate: after what arrived while this process waited for the CPU is read (timers run before I/O).
      this.#decisionTimer = setTimeout(
        () =>
          setImmediate(() => {
            this.#deciding = false;
            this.#reconsider();
          }),
        Math.min(this.#heartbeatInterval * 1500, MAX_DECISION_MS),
      );
      this.#decisionTimer.unref();
    }
    this.#reconsider();
    this.#syncFollowing();
    await Promise.all([receiving, this.#watchChange]);
    const interval = this.#options.interval ?? DEFAULT_GOSSIP_INTERVAL;
    // Lost workers are looked for at least twice per heartbeat interval, so one is reported within three of them.
    this.#watcherCheckPeriod = Math.min(interval, this.#heartbeatInterval / 2);
    this.#scheduleCheck();
    this.#noticeTimer = setInterval(() => {
      const nodes = this.#takeJoined();
      if (this.#watching) this.#notices?.send('worker-watching', { freq: this.#noticePeriod, ...SOFTWARE_INFO, nodes });
    }, this.#noticePeriod * 1000);
    this.#noticeTimer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#decisionTimer);
    clearTimeout(this.#timer);
    if (this.#noticeTimer) clearInterval(this.#noticeTimer);
    this.#timer = undefined;
    this.#noticeTimer = undefined;
    this.#elections.stop();
    await this.#watchChange;
    const receivers = [this.#receiver, this.#heartbeatReceiver];
    this.#receiver = undefined;
    this.#heartbeatReceiver = undefined;
    this.#watching = false;
    await Promise.all(receivers.map((receiver) => receiver?.close()));
    const notices = this.#notices;
    this.#notices = undefined;
    await notices?.close(2000);
  }

  #newReceiver(bindings: EventBinding[]): EventReceiver {
    const { app } = this.worker;
    const receiver = new EventReceiver(app.connection, {
      bindings,
      clock: this.clock,
      exchange: app.conf.eventExchange,
      queueTtl: this.#options.queueTtl ?? 5,
      localize: false,
      onMessage: (body, delivery) => this.onMessage(body, delivery),
    });
    receiver.on('error', (error) => this.worker.log.warning(`gossip: ${error.message}`));
    return receiver;
  }

  /**
   * What this worker tells a starting kq worker's bounded Mingle, or undefined when it leaves that to the watchers
   * (it is not one, and has decided so). Watchers: the kq workers with the lowest names among those alive, itself
   * included. A worker still deciding names itself and the watchers it has heard from: without a name to wait for,
   * the asker would collect replies until Mingle's timeout passed (a second, at every start beside a worker started
   * within 3 s). It does not name the other kq workers it knows: in a fleet started together they are deciding too,
   * and one whose node was not yet listening when the hello went out never answers, so the asker would wait the same.
   */
  mingleHints(now: number = nowSeconds()): MingleHints | undefined {
    if ((!this.#watching && !this.#deciding) || this.#stopped) return undefined;
    const alive = this.aliveWorkers(now);
    const candidates = this.#watching
      ? alive.filter((worker) => worker.fields['sw_ident'] === SOFTWARE_INFO.sw_ident).map((worker) => worker.hostname)
      : [...this.#watchersSeen.keys()];
    return { watchers: namedWatchers(this.hostname, candidates, this.#watchers), peers: alive.map((worker) => worker.hostname) };
  }

  /**
   * Peers alive: for a watcher, those whose heartbeat has not expired (or that it started watching less than two
   * heartbeat intervals ago); for any other kq worker, every peer it knows of.
   */
  aliveWorkers(now: number = nowSeconds()): ClusterWorker[] {
    return [...this.state.workers.values()].filter((worker) => this.#isAlive(worker, now));
  }

  #isAlive(worker: ClusterWorker, now: number): boolean {
    if (!this.#watching) return true;
    return worker.isAlive(now) || now < this.#watchingSince + worker.freq * 2;
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
        else if (routingKey === 'worker.watching' || routingKey === 'worker.lost' || routingKey === 'worker.found') this.onNotice(raw);
        else this.#workerEvent(raw, delivery);
      } catch (error) {
        this.worker.log.error(`gossip: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /**
   * Arms the next check. A watcher judges heartbeats, which expire after two intervals; any other worker judges only
   * the watchers' notices, which expire after two notice periods, so it checks twice a notice period rather than
   * twice a heartbeat interval: most of an idle fleet sleeps between its heartbeats.
   */
  #scheduleCheck(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    const period = this.#watching ? this.#watcherCheckPeriod : Math.max(this.#watcherCheckPeriod, this.#noticePeriod / 2);
    // setImmediate: heartbeats that arrived while this process waited for the CPU are read before anyone is judged
    // lost (a starved watcher would otherwise report the whole fleet lost, then found).
    this.#timer = setTimeout(
      () =>
        setImmediate(() => {
          this.#check(period);
          this.#scheduleCheck();
        }),
      period * 1000,
    );
    this.#timer.unref();
  }

  /** The periodic check, skipped once when this process itself did not run for two periods (it heard nothing then). */
  #check(period: number): void {
    const now = nowSeconds();
    const gap = this.#lastCheck > 0 ? now - this.#lastCheck : 0;
    this.#lastCheck = now;
    if (gap > period * 2) {
      this.worker.log.debug(`gossip: this process did not run for ${gap.toFixed(1)} s; judging nobody lost this time`);
      return;
    }
    this.periodic(now);
  }

  /**
   * Forgets workers found gone (Celery's `periodic`), reporting each as lost. A watcher looks at every worker's
   * heartbeat and tells the other kq workers whom it lost; any other worker looks only at the watchers' notices.
   */
  periodic(now: number = nowSeconds()): void {
    if (this.#stopped) return;
    const lost: string[] = [];
    if (this.#watching) {
      const silent = [...this.state.workers.values()].filter((worker) => !this.#isAlive(worker, now));
      for (const worker of this.#doubtsOwnView(silent.length, now) ? [] : silent) {
        this.#forget(worker, 'missed heartbeat from');
        this.#reportedLost.add(worker.hostname);
        lost.push(worker.hostname);
      }
      if (lost.length > 0) this.#notices?.send('worker-lost', { nodes: lost });
      if (this.#found.size > 0) this.#notices?.send('worker-found', { nodes: [...this.#found].map(([hostname, fields]) => ({ hostname, ...fields })) });
      this.#found.clear();
    } else {
      for (const [hostname, seen] of [...this.#watchersSeen]) {
        if (now < seen.at + seen.freq * 2) continue;
        this.#watchersSeen.delete(hostname);
        const worker = this.state.workers.get(hostname);
        if (worker) this.#forget(worker, 'missed heartbeat from');
      }
    }
    if (this.#reportedLost.size > 10_000) this.#reportedLost.clear();
    this.#reconsider(now);
  }

  /**
   * True while a watcher holds back a burst of losses (`isLostBurst`): it is more likely the one that fell behind, so
   * those workers are reported only if they are still silent a heartbeat interval after the burst was first seen
   * (whoever beat meanwhile is alive again and is not reported).
   */
  #doubtsOwnView(silent: number, now: number): boolean {
    if (!isLostBurst(silent, this.state.workers.size)) {
      this.#doubtingSince = undefined;
      return false;
    }
    if (this.#doubtingSince === undefined) {
      this.#doubtingSince = now;
      this.worker.log.warning(
        `gossip: ${silent} of ${this.state.workers.size} workers silent at once; this watcher may be the one behind, so they are reported lost only if still silent in ${this.#heartbeatInterval} s`,
      );
      return true;
    }
    if (now < this.#doubtingSince + this.#heartbeatInterval) return true;
    this.#doubtingSince = undefined;
    return false;
  }

  /** A notice from a watcher on kq's notice exchange (never from this worker: its own only move the clock). */
  onNotice(event: Record<string, unknown>): void {
    const from = event['hostname'];
    if (typeof from !== 'string' || from === this.hostname) {
      this.clock.forward();
      return;
    }
    if (typeof event['clock'] === 'number') this.clock.adjust(event['clock']);
    else this.clock.forward();
    const now = nowSeconds();
    const type = event['type'];
    const nodes = Array.isArray(event['nodes']) ? event['nodes'] : [];
    if (type === 'worker-watching' && event['watching'] === false) {
      this.#watchersSeen.delete(from); // it stopped watching, not running
    } else if (type === 'worker-watching') {
      // `freq` is how often this watcher says so (a heartbeat interval for kq before the notices were made rarer).
      const freq = typeof event['freq'] === 'number' && event['freq'] > 0 ? event['freq'] : this.#heartbeatInterval;
      this.#watchersSeen.set(from, { at: now, freq });
      const software = { sw_ident: event['sw_ident'], sw_ver: event['sw_ver'], sw_sys: event['sw_sys'] };
      // Its heartbeat interval is not the notices': a peer heard of only from them is taken to beat as this one does.
      this.#learn(from, this.state.workers.has(from) ? software : { freq: this.#heartbeatInterval, ...software }, now);
      this.#learnNodes(nodes, now); // the workers that joined lately, in case this one missed their coming online
    } else if (type === 'worker-lost') {
      // In a burst, the workers this one takes for the watchers are kept until their own notices stop: one lagging
      // watcher's word would otherwise leave it short of watchers, and it would start following every heartbeat.
      const kept = isLostBurst(nodes.length, this.state.workers.size) ? this.#presumedWatchers() : new Set<string>();
      for (const node of nodes) {
        const worker = typeof node === 'string' && node !== this.hostname ? this.state.workers.get(node) : undefined;
        if (!worker) continue;
        if (kept.has(worker.hostname)) {
          if (!this.#watchersSeen.has(worker.hostname)) this.#watchersSeen.set(worker.hostname, { at: now, freq: this.#noticePeriod });
          continue;
        }
        this.#watchersSeen.delete(node as string);
        this.#forget(worker, `reported lost by ${from}:`);
      }
    } else if (type === 'worker-found') {
      this.#learnNodes(nodes, now);
    }
    this.#reconsider(now);
  }

  /** The watchers Mingle named (the kq workers known at start) whose names come before this worker's. */
  #namedWatchersBelow(): number {
    let below = 0;
    for (const worker of this.state.workers.values()) {
      if (worker.fields['sw_ident'] === SOFTWARE_INFO.sw_ident && compareCodePoints(worker.hostname, this.hostname) < 0) below++;
    }
    return below;
  }

  /** The kq workers this one takes for the watchers: the `watchers` lowest names among the kq workers it knows. */
  #presumedWatchers(): Set<string> {
    const kq = [...this.state.workers.values()].filter((worker) => worker.fields['sw_ident'] === SOFTWARE_INFO.sw_ident).map((worker) => worker.hostname);
    return new Set(kq.sort(compareCodePoints).slice(0, this.#watchers));
  }

  #forget(worker: ClusterWorker, why: string): void {
    this.worker.log.info(`${why} ${worker.hostname}`);
    this.state.workers.delete(worker.hostname);
    this.emit('node-lost', worker);
  }

  /** Learns the peers a notice names (`{hostname, ...fields}` each), this worker aside. */
  #learnNodes(nodes: readonly unknown[], now: number): void {
    for (const node of nodes) {
      if (!node || typeof node !== 'object') continue;
      const { hostname, ...fields } = node as Record<string, unknown>;
      if (typeof hostname === 'string' && hostname !== this.hostname) this.#learn(hostname, fields, now);
    }
  }

  /** The workers joined since the last notice and still alive, each named once: the map is emptied. */
  #takeJoined(): Array<Record<string, unknown>> {
    const nodes: Array<Record<string, unknown>> = [];
    for (const [hostname, fields] of this.#joined) if (this.state.workers.has(hostname)) nodes.push({ hostname, ...fields });
    this.#joined.clear();
    return nodes;
  }

  /** A peer heard of other than by its own events: known (and alive) from now, as if it had sent a heartbeat. */
  #learn(hostname: string, fields: Record<string, unknown>, now: number): void {
    const known = this.state.workers.get(hostname);
    if (known) {
      for (const [key, value] of Object.entries(fields)) if (value !== undefined) known.fields[key] = value;
      return;
    }
    const event: ReceivedEvent = { utcoffset: 0, pid: 0, ...fields, type: 'worker-heartbeat', hostname, timestamp: now, local_received: now, clock: 0 };
    this.state.event(event);
  }

  /** Watches or stops watching, as the kq workers known alive below this one's name say. */
  #reconsider(now: number = nowSeconds()): void {
    if (this.#stopped) return;
    if (this.#watchers === Infinity) {
      if (!this.#watching) {
        this.#watching = true;
        this.#watchingSince = now;
      }
      return;
    }
    if (this.#deciding) return;
    let below = 0;
    for (const worker of this.state.workers.values()) {
      if (worker.fields['sw_ident'] === SOFTWARE_INFO.sw_ident && compareCodePoints(worker.hostname, this.hostname) < 0 && this.#isAlive(worker, now)) below++;
    }
    const watch = below < this.#watchers;
    if (watch !== this.#watching) {
      this.#watching = watch;
      if (watch) this.#watchingSince = now;
      else this.#watchersSeen.clear();
      this.worker.log.debug(watch ? 'gossip: following every heartbeat' : 'gossip: leaving heartbeats to the watchers');
      this.#notices?.send('worker-watching', watch ? { freq: this.#noticePeriod, ...SOFTWARE_INFO } : { watching: false });
      if (this.#timer) {
        // At the new role's pace from now (before start, start arms it); the last check's time was the old pace's.
        this.#lastCheck = 0;
        this.#scheduleCheck();
      }
    }
    this.#syncFollowing();
  }

  /** Binds heartbeats while watching or deciding, unbinds them otherwise (one change at a time, in order). */
  #syncFollowing(): void {
    const follow = (this.#watching || this.#deciding) && !this.#stopped;
    if (follow === (this.#heartbeatReceiver !== undefined)) return;
    this.#watchChange = this.#watchChange.then(() => this.#followHeartbeats(follow)).catch((error: unknown) => {
      this.worker.log.warning(`gossip: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  async #followHeartbeats(follow: boolean): Promise<void> {
    if (follow && !this.#heartbeatReceiver && !this.#stopped) {
      const receiver = this.#newReceiver([{ routingKey: 'worker.heartbeat' }]);
      this.#heartbeatReceiver = receiver;
      await receiver.start();
    } else if (!follow && this.#heartbeatReceiver) {
      const receiver = this.#heartbeatReceiver;
      this.#heartbeatReceiver = undefined;
      await receiver.close();
    }
  }

  /** Starts an election (the `election` control command); see `Elections`. */
  election(id: string, topic: string, action: unknown = null): void {
    this.#elections.start(id, topic, action);
  }

  /** A `worker-elect` from any worker (this one included). */
  onElect(event: Record<string, unknown>): void {
    this.#elections.onElect(event);
  }

  /** A `worker-elect-ack`. */
  onElectAck(event: Record<string, unknown>): void {
    this.#elections.onElectAck(event);
  }

  #workerEvent(raw: Record<string, unknown> & { type: string }, delivery: Delivery): void {
    const hostname = typeof delivery.headers['hostname'] === 'string' && delivery.headers['hostname'] !== '' ? delivery.headers['hostname'] : raw['hostname'];
    if (hostname === this.hostname) {
      this.clock.forward();
      return;
    }
    const event = prepareEvent(raw, this.clock, { localize: false });
    if (this.#watching && !this.state.workers.has(event.hostname) && event.type !== 'worker-offline') {
      this.#joined.set(event.hostname, noticeFields(event));
    }
    if (this.#reportedLost.delete(event.hostname) && this.#watching && event.type === 'worker-heartbeat') {
      this.#found.set(event.hostname, noticeFields(event)); // announced at the next check
    }
    this.state.event(event);
    this.#reconsider();
  }

  /** The `task` topic: the action is a signature to send. */
  async #callTask(action: unknown): Promise<void> {
    if (!action || typeof action !== 'object') throw new KqError(`Could not call task: ${JSON.stringify(action)} is not a signature`);
    const { task, args, kwargs } = action as { task?: unknown; args?: unknown; kwargs?: unknown };
    if (typeof task !== 'string') throw new KqError(`Could not call task: the signature has no task name`);
    await this.worker.app.sendTask(task, Array.isArray(args) ? args : [], kwargs && typeof kwargs === 'object' ? (kwargs as Record<string, unknown>) : {});
  }
}

/** What a watcher's notice (`worker-watching`, `worker-found`) says of a peer besides its name. */
function noticeFields(event: Record<string, unknown>): Record<string, unknown> {
  return { freq: event['freq'], sw_ident: event['sw_ident'] };
}
