import type { Claim } from '@kq/core';
import type { PendingAck } from './ack-batcher';
import type { ClusterQueues } from './cluster-queues';
import type { RedisClient } from './connection-factory';
import type { BlockingWaiter } from './blocking-pool';
import type { KeyLayout } from './key-layout';

/** A claim of the Redis store: what a settle needs to find (and fence) the delivery. */
export interface RedisClaim extends Claim {
  /** Priority step of the list it came from. */
  readonly step: number;
  /** The envelope exactly as it was stored. */
  readonly raw: string;
  /** The delivery tag the claim was recorded under in `unacked` (the envelope's `properties.delivery_tag`). */
  readonly tag: string;
  /** Taken without acknowledgement: nothing is recorded in Redis, nothing to settle. */
  readonly noAck: boolean;
  /**
   * The `unacked_index` score this process last wrote for the claim: its lease and its fence (a settle acts only while
   * it is still there; see lua/prelude.lua). Rewritten by every renewal; '' until recorded, and for noAck claims.
   */
  score: string;
  /** Its ack is on its way: a renewal that finds the claim gone does not count it lost. */
  settling?: boolean;
  /**
   * Set while the record of a claim handed out early (see `#takePoppedEarly`) is on its way: resolves true once it
   * is in Redis, false when it could not be made (the message went back to its list). Settles wait for it.
   */
  recording?: Promise<boolean> | undefined;
}

/** The ACK script's arguments for a batch of settles (lua/prelude.lua's `settle_many`): each claim's tag and score. */
export function settleArguments(acks: ReadonlyArray<PendingAck<RedisClaim>>): string[] {
  const args: string[] = [];
  for (const ack of acks) args.push(ack.target.tag, ack.target.score);
  return args;
}

/** What the claimer needs of its store. */
export interface ClaimerHost {
  readonly layout: KeyLayout;
  /** The lease of a claim, and Kombu's visibility timeout, in µs (the claim's score is their difference from now). */
  readonly leaseUs: number;
  readonly visibilityUs: number;
  /** The command connection (throws when the store is not open). */
  commands(): RedisClient;
  pool(): BlockingWaiter | undefined;
  /** The cluster layout's record of known queues; undefined in Kombu's layout. */
  clusterQueues(): ClusterQueues | undefined;
  isClosed(): boolean;
  /** Acks waiting to be sent, to carry on a claim call (the claimer settles them); none is also an answer. */
  takeAcks(): Array<PendingAck<RedisClaim>>;
  /** Acks carried on a claim call that failed. */
  acksFailed(acks: ReadonlyArray<PendingAck<RedisClaim>>, error: unknown): void;
  /** Applies an ack script's answer for one ack: 1 done, 0 gone already, -1 stale. */
  settleAck(ack: PendingAck<RedisClaim>, result: number): void;
  /** A recorded claim: the store renews its lease until it is settled. */
  hold(claim: RedisClaim): void;
  /** How many claims this process holds now. */
  held(): number;
  warn(message: string): void;
  reportError(error: unknown): void;
}
