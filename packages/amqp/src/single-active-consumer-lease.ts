import { randomUUID } from 'node:crypto';
import { KqError, type BeatLease, type BeatLeaseListener, type BeatLeaseOptions, type CommitOutcome, type TickCommit } from '@kq/core';
import type { AmqplibChannel, AmqplibConsumeMessage } from './amqplib-loader';
import type { AmqpLeaseHost } from './lease-host';
import { commitTransaction, selectTransactions } from './amqp-transaction';
import { closeWithin } from './close-within';
import { toPublishOptions } from './message-mapping';

/*
 * kq beat's leader lease and schedule state on RabbitMQ (core's `BeatLease` contract, `AmqpTransport.beatLease`).
 *
 * One durable queue per schedule group, `kq.beat.<group>`, declared with `x-single-active-consumer`. Every beat
 * process consumes it; RabbitMQ delivers only to the active consumer, and when that consumer's connection or
 * channel goes away it returns the unacknowledged messages to the queue and makes the next consumer active.
 *
 * The messages in the queue are the schedule state itself: JSON snapshots `{entries: {name: lastTick}, seq,
 * leaders}`. The active consumer receives and holds (unacked) all of them, which is what makes it the leader; a
 * snapshot is never lost to a crash, because an unacked message goes back to the queue. Snapshots merge by taking
 * the maximum per entry, so a stray extra snapshot (a newcomer's empty bootstrap one, or a duplicate left by a crash)
 * is harmless and is folded into the next commit.
 *
 * The channel is transactional (`tx.select`). A commit publishes the tick's task message, publishes the new
 * snapshot, acks the snapshots held, and `tx.commit`s: the tick is recorded and sent together or not at all. A leader
 * that dies before `tx.commit-ok` leaves everything as it was (the broker discards the open transaction and requeues
 * the held snapshots), so the next leader resumes after the last committed tick. A commit can only come from the
 * channel that holds the snapshots, so a deposed leader cannot commit: fencing by the broker.
 */

/** Body of a state snapshot. */
interface Snapshot {
  kq: 'beat-state';
  v: 1;
  /** Commits so far (informational). */
  seq: number;
  /** Leaderships so far: the fencing epoch of the next leader is `leaders + 1`. */
  leaders: number;
  entries: Record<string, number>;
}

/**
 * Core's `BeatLeaseOptions`, of which RabbitMQ needs only `group`: `leaseMs` is unused (the broker notices a dead
 * leader by its connection) and `renewIntervalMs` is how often a process whose channel was lost tries to open it
 * again (default 1000 ms).
 */
export interface AmqpBeatLeaseOptions extends Pick<BeatLeaseOptions, 'group'>, Partial<Omit<BeatLeaseOptions, 'group'>> {
  /**
   * How long a new active consumer waits after the last snapshot arrives before it acts (the previous leader's
   * snapshots are requeued and delivered back to back), ms. Default 250.
   */
  settleMs?: number;
  /** Queue name. Default `kq.beat.<group>`. */
  queue?: string;
  /**
   * The lease queue's type. A classic queue lives on one node: on a cluster, losing that node leaves no beat able to
   * lead until it is back; a quorum queue is replicated and elects on. Default: `'quorum'` when the broker URL lists
   * several nodes (a cluster), else `'classic'` (what single-node deployments already declared).
   */
  queueType?: 'classic' | 'quorum';
}

/** Longest a leader waits for its own committed snapshot to come back before it assumes it lost the queue. */
const OWN_SNAPSHOT_TIMEOUT_MS = 5000;

/** One open consuming channel and what it holds. */
interface Session {
  readonly channel: AmqplibChannel;
  readonly held: AmqplibConsumeMessage[];
  /** Merged view of every snapshot held (or committed) on this channel. */
  readonly state: Snapshot;
  settleTimer: NodeJS.Timeout | undefined;
  leader: Leader | undefined;
  /** Message id of the snapshot the last commit published, until it is delivered back. */
  awaiting: { id: string; arrived: () => void } | undefined;
  lost: boolean;
}

interface Leader {
  readonly epoch: number;
  readonly controller: AbortController;
  /** Commits run one at a time. */
  queue: Promise<unknown>;
}

/**
 * Leader election for kq beat on RabbitMQ with a single-active-consumer queue whose messages are the schedule
 * state (see the comment at the top of this file for the protocol and its guarantees).
 */
export class AmqpBeatLease implements BeatLease {
  readonly kind = 'amqp';
  readonly queue: string;
  readonly queueType: 'classic' | 'quorum';
  readonly #transport: AmqpLeaseHost;
  readonly #settleMs: number;
  readonly #retryMs: number;
  #listener: BeatLeaseListener | undefined;
  #session: Session | undefined;
  #running = false;
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(transport: AmqpLeaseHost, options: AmqpBeatLeaseOptions) {
    this.#transport = transport;
    this.queue = options.queue ?? `kq.beat.${options.group}`;
    this.queueType = options.queueType ?? (transport.brokerCount > 1 ? 'quorum' : 'classic');
    this.#settleMs = options.settleMs ?? 250;
    this.#retryMs = options.renewIntervalMs ?? 1000;
  }

  async start(listener: BeatLeaseListener): Promise<void> {
    this.#listener = listener;
    this.#running = true;
    this.#transport.on('disconnected', this.#onDisconnected);
    await this.#open();
  }

  /** The connection died: whatever our channel held is back in the queue, so we lead no more. */
  readonly #onDisconnected = (): void => {
    const session = this.#session;
    if (session) this.#onClosed(session);
  };

  async stop(): Promise<void> {
    this.#running = false;
    this.#transport.off('disconnected', this.#onDisconnected);
    clearTimeout(this.#retryTimer);
    const session = this.#session;
    this.#session = undefined;
    if (!session) return;
    this.#lose(session, new KqError('This beat stopped and gave up its lease.'));
    // Closing the channel returns the held snapshots to the queue, for the next consumer in line.
    await closeWithin(session.channel);
  }

  async #open(): Promise<void> {
    const connection = await this.#transport.supervisor.connection();
    const channel = await connection.createChannel();
    const session: Session = { channel, held: [], state: emptySnapshot(), settleTimer: undefined, leader: undefined, awaiting: undefined, lost: false };
    channel.on('error', () => undefined); // the 'close' that follows is what we act on
    channel.on('close', () => this.#onClosed(session));
    try {
      await channel.assertQueue(this.queue, { durable: true, arguments: this.#queueArguments() }).catch((error: unknown) => {
        throw this.#declareError(error);
      });
      await selectTransactions(channel);
      // A snapshot of our own, so the queue is never empty (a fresh group, or a broker that lost its messages).
      channel.sendToQueue(this.queue, encodeSnapshot(emptySnapshot()), { persistent: true, contentType: 'application/json', messageId: randomUUID() });
      await commitTransaction(channel);
      this.#session = session;
      await channel.consume(this.queue, (message) => this.#onDelivery(session, message), { noAck: false });
    } catch (error) {
      this.#session = this.#session === session ? undefined : this.#session;
      await closeWithin(channel);
      throw error;
    }
  }

  #queueArguments(): Record<string, unknown> {
    return this.queueType === 'quorum' ? { 'x-single-active-consumer': true, 'x-queue-type': 'quorum' } : { 'x-single-active-consumer': true };
  }

  /** A 406 here is a lease queue declared earlier as the other type: say how to move on. */
  #declareError(error: unknown): unknown {
    if (!(error instanceof Error) || !/PRECONDITION_FAILED|\b406\b/.test(error.message)) return error;
    const other = this.queueType === 'quorum' ? 'classic' : 'quorum';
    return new KqError(
      `The beat queue ${JSON.stringify(this.queue)} exists as a ${other} queue, and this beat declares it ${this.queueType} ` +
        `(${this.queueType === 'quorum' ? 'the broker URL lists several nodes' : 'queueType classic'}). Stop every beat of the group, delete the queue ` +
        `(rabbitmqctl delete_queue ${this.queue}; it holds only the last runs: the next leader forgets them and sends what falls due from then on), and start them again; ` +
        `or keep it ${other} with the lease option queueType: '${other}'.`,
      { cause: error },
    );
  }

  #onClosed(session: Session): void {
    this.#lose(session, new KqError(`The channel of beat queue ${JSON.stringify(this.queue)} closed; its state went back to the queue.`));
    if (this.#session !== session) return;
    this.#session = undefined;
    this.#reopenLater();
  }

  #reopenLater(): void {
    if (!this.#running) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => {
      if (!this.#running || this.#session) return;
      this.#open().catch((error: unknown) => {
        this.#listener?.error(new KqError(`Could not open the beat queue ${JSON.stringify(this.queue)}: ${describe(error)}`, { cause: error }));
        this.#reopenLater();
      });
    }, this.#retryMs);
    this.#retryTimer.unref();
  }

  #onDelivery(session: Session, message: AmqplibConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled our consumer (queue deleted): the held snapshots must go back, so drop the channel.
      void closeWithin(session.channel);
      return;
    }
    session.held.push(message);
    mergeInto(session.state, decodeSnapshot(message.content));
    if (session.awaiting && message.properties.messageId === session.awaiting.id) session.awaiting.arrived();
    if (session.leader) return;
    // Only the active consumer receives anything: we are about to lead. Let the rest of the snapshots arrive first.
    clearTimeout(session.settleTimer);
    session.settleTimer = setTimeout(() => void this.#elect(session), this.#settleMs);
  }

  async #elect(session: Session): Promise<void> {
    if (session.lost || session.leader || !this.#running) return;
    try {
      // Everything ready in the queue has been handed to us once nothing is left ready (we are the only receiver).
      const { messageCount } = await session.channel.checkQueue(this.queue);
      if (messageCount > 0) {
        session.settleTimer = setTimeout(() => void this.#elect(session), this.#settleMs);
        return;
      }
      const epoch = session.state.leaders + 1;
      session.state.leaders = epoch;
      // Fold every held snapshot into one and make the new epoch durable before acting on it.
      await this.#writeSnapshot(session, []);
      if (session.lost) return;
      const leader: Leader = { epoch, controller: new AbortController(), queue: Promise.resolve() };
      session.leader = leader;
      this.#listener?.elected({
        epoch,
        lastTicks: new Map(Object.entries(session.state.entries)),
        signal: leader.controller.signal,
        commit: (record) => {
          const result = leader.queue.then(() => this.#commit(session, leader, record));
          leader.queue = result.catch(() => undefined);
          return result;
        },
      });
    } catch (error) {
      this.#listener?.error(new KqError(`Could not take over beat queue ${JSON.stringify(this.queue)}: ${describe(error)}`, { cause: error }));
      await closeWithin(session.channel);
    }
  }

  async #commit(session: Session, leader: Leader, record: TickCommit): Promise<CommitOutcome> {
    if (leader.controller.signal.aborted || session.lost) return 'fenced';
    const recorded = session.state.entries[record.entry];
    if (recorded !== undefined && recorded >= record.tick) return 'stale';
    const publications: Array<(channel: AmqplibChannel) => void> = [];
    if (record.publish) {
      const { exchange, routingKey, message } = record.publish;
      publications.push((channel) => channel.publish(exchange, routingKey, message.body, toPublishOptions(message, false)));
    }
    const previous = recorded;
    session.state.entries[record.entry] = record.tick;
    try {
      await this.#writeSnapshot(session, publications);
    } catch (error) {
      // The transaction did not commit as far as we know: nothing was sent. If it did commit after all, the next
      // leader reads the tick from the broker; either way this process no longer leads.
      if (previous === undefined) delete session.state.entries[record.entry];
      else session.state.entries[record.entry] = previous;
      this.#lose(session, new KqError(`A beat commit failed (${describe(error)}); giving up the lease.`, { cause: error }));
      await closeWithin(session.channel);
      return 'fenced';
    }
    return 'committed';
  }

  /**
   * One transaction: the extra publications, the merged snapshot, acks of every snapshot held. Then waits for the
   * new snapshot to come back (it is ours to hold and ack next time).
   */
  async #writeSnapshot(session: Session, publications: ReadonlyArray<(channel: AmqplibChannel) => void>): Promise<void> {
    const { channel } = session;
    const acked = session.held.splice(0);
    session.state.seq += 1;
    const id = randomUUID();
    const arrived = new Promise<void>((resolve) => (session.awaiting = { id, arrived: resolve }));
    try {
      // These throw at once on a channel amqplib knows is closed; otherwise a dead channel fails the commit.
      for (const publish of publications) publish(channel);
      channel.sendToQueue(this.queue, encodeSnapshot(session.state), { persistent: true, contentType: 'application/json', messageId: id });
      for (const message of acked) channel.ack(message);
      await commitTransaction(channel);
    } catch (error) {
      session.held.unshift(...acked);
      session.awaiting = undefined;
      throw error;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), OWN_SNAPSHOT_TIMEOUT_MS)));
    const outcome = await Promise.race([arrived.then(() => 'arrived' as const), timeout]);
    clearTimeout(timer);
    session.awaiting = undefined;
    if (outcome === 'timeout' && !session.lost) {
      // Committed, but someone else receives the queue's messages now: we are not the active consumer any more.
      this.#lose(session, new KqError(`The committed beat state did not come back within ${OWN_SNAPSHOT_TIMEOUT_MS} ms; giving up the lease.`));
      await closeWithin(channel);
    }
  }

  #lose(session: Session, reason: Error): void {
    if (session.lost) return;
    session.lost = true;
    clearTimeout(session.settleTimer);
    session.awaiting?.arrived();
    const leader = session.leader;
    session.leader = undefined;
    if (leader) {
      leader.controller.abort(reason);
      this.#listener?.deposed(reason);
    }
  }
}

function emptySnapshot(): Snapshot {
  return { kq: 'beat-state', v: 1, seq: 0, leaders: 0, entries: {} };
}

function encodeSnapshot(snapshot: Snapshot): Buffer {
  return Buffer.from(JSON.stringify(snapshot));
}

/** A snapshot from the queue; anything unreadable counts as empty (it is acked away by the next commit). */
function decodeSnapshot(body: Buffer): Snapshot {
  const snapshot = emptySnapshot();
  try {
    const data = JSON.parse(body.toString('utf8')) as Partial<Snapshot>;
    if (typeof data.seq === 'number') snapshot.seq = data.seq;
    if (typeof data.leaders === 'number') snapshot.leaders = data.leaders;
    if (data.entries && typeof data.entries === 'object') {
      for (const [name, tick] of Object.entries(data.entries)) if (typeof tick === 'number' && Number.isFinite(tick)) snapshot.entries[name] = tick;
    }
  } catch {
    // unreadable: empty
  }
  return snapshot;
}

function mergeInto(target: Snapshot, other: Snapshot): void {
  target.seq = Math.max(target.seq, other.seq);
  target.leaders = Math.max(target.leaders, other.leaders);
  for (const [name, tick] of Object.entries(other.entries)) target.entries[name] = Math.max(target.entries[name] ?? -Infinity, tick);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
