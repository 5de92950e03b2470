/** A message a worker rejected, kept where a person can look at it and send it back (`kq dlq`). */
export interface DeadLetter {
  /** Identifies the entry for `requeue({ ids })` (stable while it is kept). */
  readonly id: string;
  /** The queue it was rejected from. */
  readonly queue: string;
  /** Why (the worker's reason; `rejected` when none was given). */
  readonly reason: string;
  /** When it was rejected (epoch ms), where known. */
  readonly at: number | null;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly contentType: string;
  readonly body: Buffer;
}

export interface DeadLetterQuery {
  /** Only entries rejected from (or, on RabbitMQ, kept in) this queue. */
  queue?: string;
  /** At most this many, oldest first. Default 100. */
  limit?: number;
}

/**
 * Rejected messages a transport keeps (Redis: the `_kq.dead` list; RabbitMQ: a dead-letter queue, named by `queue`),
 * for `kq dlq list|requeue|purge` and the dashboard. `requeue` sends entries back to the queue they came from.
 */
export interface DeadLetterBox {
  list(query?: DeadLetterQuery): Promise<DeadLetter[]>;
  /** Sends back every matching entry (or those in `ids`); resolves to how many went back. */
  requeue(query?: { queue?: string; ids?: readonly string[] }): Promise<number>;
  /** Deletes every matching entry; resolves to how many. */
  purge(query?: { queue?: string }): Promise<number>;
}

/** Transports that keep rejected messages implement this. */
export interface DeadLetterCapable {
  deadLetters(): DeadLetterBox;
}

export function hasDeadLetters(transport: object): transport is DeadLetterCapable {
  return typeof (transport as Partial<DeadLetterCapable>).deadLetters === 'function';
}
