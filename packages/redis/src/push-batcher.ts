import { CommandBatch, WRITE_PIECE_CHARS } from './command-batch';
import type { RedisClient } from './connection-factory';

/** Most envelopes sent in one LPUSH (keeps a single command, and Redis's time on it, bounded). */
const MAX_VALUES = 1000;

interface PendingPush {
  readonly values: string[];
  readonly waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>;
}

/**
 * Gathers the pushes to each list made in one burst (without I/O in between) into one `LPUSH key v1 v2 ...`: Redis pushes
 * the values in the order given, so the list order (and FIFO consumption) is what one LPUSH each would have made,
 * while a burst of publishes costs one command and one socket write per list instead of one per message.
 * The first push of a burst is sent at once; the rest wait only until the microtasks queued when they were made have
 * run (`process.nextTick`), not for I/O.
 * `pushAll` (a published batch) joins the same burst, so it keeps its place among single pushes.
 */
export class PushBatcher {
  readonly #send: (key: string, values: readonly string[]) => Promise<unknown>;
  readonly #pending = new Map<string, PendingPush>();
  #scheduled = false;

  constructor(send: (key: string, values: readonly string[]) => Promise<unknown>) {
    this.#send = send;
  }

  push(key: string, value: string): Promise<void> {
    if (!this.#scheduled && this.#pending.size === 0) {
      // Nothing is gathering: this push goes out at once (an awaited publish waits for no tick), and the pushes that
      // follow in this turn gather behind it.
      this.#schedule();
      try {
        return this.#send(key, [value]).then(() => undefined);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise((resolve, reject) => {
      const pending = this.#pendingFor(key);
      pending.values.push(value);
      pending.waiters.push({ resolve, reject });
      this.#sendWhenDue(key, pending);
    });
  }

  /** Pushes `values` in order, as a `push` of each would, with one promise for them all. */
  pushAll(key: string, values: readonly string[]): Promise<void> {
    const parts: Array<Promise<void>> = [];
    let at = 0;
    while (at < values.length) {
      // One waiter per LPUSH the values end up in (a batch larger than MAX_VALUES spans several).
      parts.push(
        new Promise((resolve, reject) => {
          const pending = this.#pendingFor(key);
          const end = Math.min(values.length, at + MAX_VALUES - pending.values.length);
          for (; at < end; at++) pending.values.push(values[at] as string);
          pending.waiters.push({ resolve, reject });
          this.#sendWhenDue(key, pending);
        }),
      );
    }
    return parts.length === 1 ? (parts[0] as Promise<void>) : Promise.all(parts).then(() => undefined);
  }

  #pendingFor(key: string): PendingPush {
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = { values: [], waiters: [] };
      this.#pending.set(key, pending);
    }
    return pending;
  }

  #sendWhenDue(key: string, pending: PendingPush): void {
    if (pending.values.length >= MAX_VALUES) void this.#sendOne(key, pending);
    else this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // After the microtasks queued now have run: every push a burst of sends makes without I/O in between.
    process.nextTick(() => void this.flush());
  }

  /** Sends everything waiting now; resolves once sent (failures reach the pushes' own promises). */
  flush(): Promise<void> {
    this.#scheduled = false;
    const sends: Array<Promise<void>> = [];
    for (const [key, pending] of this.#pending) sends.push(this.#sendOne(key, pending));
    return Promise.all(sends).then(() => undefined);
  }

  /** Fails every waiting push (the store is closing). */
  failAll(error: unknown): void {
    for (const pending of this.#pending.values()) for (const waiter of pending.waiters) waiter.reject(error);
    this.#pending.clear();
  }

  #sendOne(key: string, pending: PendingPush): Promise<void> {
    this.#pending.delete(key);
    let sent: Promise<unknown>;
    try {
      sent = this.#send(key, pending.values);
    } catch (error) {
      sent = Promise.reject(error); // a store without a connection throws at once
    }
    return sent.then(
      () => {
        for (const waiter of pending.waiters) waiter.resolve();
      },
      (error: unknown) => {
        for (const waiter of pending.waiters) waiter.reject(error);
      },
    );
  }
}

/**
 * `LPUSH key ...values` as the batcher sends it: one command, or, when the values pass `WRITE_PIECE_CHARS` in all,
 * one LPUSH per run of about that size, in order, in one write (a bulk publish of 1,000 envelopes would otherwise be
 * one string of ~1 MB, which V8 keeps in memory mapped for it alone, faulted in page by page at every batch). Redis
 * runs a connection's commands in order, so the list ends up as one LPUSH would leave it; a consumer may take from it
 * between two of them, as between two publishes. Rejects with the first error.
 */
export async function lpushInPieces(client: RedisClient, key: string, values: readonly string[]): Promise<void> {
  let chars = 0;
  for (const value of values) chars += value.length;
  if (chars <= WRITE_PIECE_CHARS) {
    await client.lpush(key, ...values);
    return;
  }
  for (const [error] of await new CommandBatch(client).callInPieces('lpush', key, values).exec()) if (error) throw error;
}
