import type { ClusterWorker } from '../events/cluster-state';

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
  /**
   * How many kq workers follow every heartbeat: the ones with the lowest node names (Python's string order) among the
   * kq workers alive. The others follow only online, offline and election events, and hear from the watchers who was
   * lost, so the traffic each worker consumes does not grow with the fleet. Default 2; `Infinity`: every worker
   * follows every heartbeat (Celery's way, whose cost grows with the square of the fleet).
   */
  watchers?: number;
  /** This worker's heartbeat interval, seconds (default 2): how often lost workers are looked for; a watcher says so every five. */
  heartbeatInterval?: number;
}

/** Celery's default interval between checks for lost workers, seconds. */
export const DEFAULT_GOSSIP_INTERVAL = 5.0;

/**
 * kq workers that follow every heartbeat (the watchers), by default. Two: a watcher that dies is still reported by
 * the other, and the next name takes its place; each more one costs the broker a delivery of every heartbeat (with
 * three, on RabbitMQ, the watchers' receiving was about two fifths of what an idle kq worker cost it).
 */
export const DEFAULT_GOSSIP_WATCHERS = 2;

/**
 * A watcher says it watches once every this many heartbeat intervals. Every kq worker receives these, so they are
 * kept rare: a watcher that dies is reported by the other watchers within three heartbeat intervals, and a starting
 * worker learns the watchers from Mingle; the notices only matter when every watcher went at once.
 */
export const WATCHING_NOTICE_INTERVALS = 5;
