import type { OutgoingMessage } from '../message';

/**
 * The broker-side half of kq beat: leader election with fencing, and the schedule's last-run state. A transport
 * offers it as `transport.beatLease(options)` (memory, Redis, RabbitMQ, PostgreSQL); kq beat runs on any transport that does.
 * `defineBeatLeaseSuite` in @kq/test-harness checks an implementation. The contract that makes a tick sent exactly
 * once across failovers:
 *
 * - at most one process at a time holds a `BeatLeadership`, and a commit from a process that lost it is refused;
 * - `commit` records "entry's last tick = tick" **and** publishes the tick's message as one atomic step, and refuses
 *   (`stale`) a tick at or before the one recorded — so a new leader resumes exactly after the last committed tick.
 */
export interface BeatLease {
  /** `redis`, `amqp`, `memory`, or a custom transport's name. */
  readonly kind: string;
  /** Starts campaigning; `listener.elected` is called every time this process becomes leader. */
  start(listener: BeatLeaseListener): Promise<void>;
  /** Stops campaigning and gives up leadership now (a follower takes over without waiting for a timeout). */
  stop(): Promise<void>;
}

export interface BeatLeaseListener {
  elected(leadership: BeatLeadership): void;
  /** Leadership ended (lease lost, connection lost, stopped). */
  deposed(reason: Error): void;
  /** Something failed in the background (a renewal, a reconnect); the lease keeps trying. */
  error(error: Error): void;
}

/** The leader's handle: valid until `signal` aborts. */
export interface BeatLeadership {
  /** Fencing token: strictly greater for every new leadership of the same schedule. */
  readonly epoch: number;
  /** The last recorded tick of every entry (epoch ms) when leadership was won. */
  readonly lastTicks: ReadonlyMap<string, number>;
  /** Aborted as soon as this leadership is known to be over. */
  readonly signal: AbortSignal;
  /** Records a tick (and publishes its message) atomically; see `TickCommit`. */
  commit(record: TickCommit): Promise<CommitOutcome>;
}

/** A message to publish with a tick: exactly what `Channel.publish` takes. */
export interface TickPublication {
  exchange: string;
  routingKey: string;
  message: OutgoingMessage;
}

export interface TickCommit {
  /** Schedule entry name. */
  entry: string;
  /** The tick's scheduled time, epoch ms; recorded only if later than the entry's last recorded tick. */
  tick: number;
  /** The tick's task message; absent to record ticks that are skipped. */
  publish?: TickPublication;
}

/**
 * `committed`: recorded and published together. `stale`: the entry already has this tick or a later one (nothing
 * was published). `fenced`: this process is no longer the leader (nothing was published).
 */
export type CommitOutcome = 'committed' | 'stale' | 'fenced';

/** Settings every broker-side lease understands. */
export interface BeatLeaseOptions {
  /** Schedule group: processes with the same group elect one leader and share one state. */
  group: string;
  /** How long a lease outlives its last renewal (Redis), i.e. how long a crashed leader blocks a takeover. */
  leaseMs: number;
  /** How often the leader renews and followers try to take over. */
  renewIntervalMs: number;
}
