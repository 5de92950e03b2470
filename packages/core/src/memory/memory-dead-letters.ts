import type { DeadLetter, DeadLetterBox, DeadLetterQuery } from '../dead-letters';
import { randomUuid } from '../random-uuid';
import type { StoredMessage } from '../virtual/virtual-store';

interface KeptLetter {
  id: string;
  queue: string;
  reason: string;
  at: number;
  message: StoredMessage;
  priority: number;
}

/** Most rejected messages one in-process broker keeps; older ones are dropped first (a bound, as Redis's `_kq.dead`). */
export const MEMORY_DEAD_LETTER_MAX = 10_000;

/**
 * The memory broker's rejected messages, as Redis keeps them in `_kq.dead`: what a consumer rejects from a queue
 * with no dead-letter exchange, with its reason, for `kq dlq` and the dashboard of an in-process app. `requeue`
 * puts a letter back on the tail of the queue it came from, with its priority.
 */
export class MemoryDeadLetters implements DeadLetterBox {
  readonly #letters: KeptLetter[] = [];
  readonly #put: (queue: string, message: StoredMessage, priority: number) => void;
  readonly #max: number;

  constructor(put: (queue: string, message: StoredMessage, priority: number) => void, max = MEMORY_DEAD_LETTER_MAX) {
    this.#put = put;
    this.#max = max;
  }

  keep(queue: string, message: StoredMessage, priority: number, reason: string): void {
    this.#letters.push({ id: randomUuid(), queue, reason, at: Date.now(), message, priority });
    if (this.#letters.length > this.#max) this.#letters.splice(0, this.#letters.length - this.#max);
  }

  async list(query: DeadLetterQuery = {}): Promise<DeadLetter[]> {
    return this.#matching(query.queue)
      .slice(0, query.limit ?? 100)
      .map(({ id, queue, reason, at, message }) => ({ id, queue, reason, at, headers: message.headers, contentType: message.contentType, body: message.body }));
  }

  async requeue(query: { queue?: string; ids?: readonly string[] } = {}): Promise<number> {
    const ids = query.ids ? new Set(query.ids) : undefined;
    const chosen = this.#matching(query.queue).filter((letter) => !ids || ids.has(letter.id));
    this.#remove(chosen);
    for (const letter of chosen) this.#put(letter.queue, letter.message, letter.priority);
    return chosen.length;
  }

  async purge(query: { queue?: string } = {}): Promise<number> {
    const chosen = this.#matching(query.queue);
    this.#remove(chosen);
    return chosen.length;
  }

  /** Oldest first, optionally of one queue. */
  #matching(queue: string | undefined): KeptLetter[] {
    return queue === undefined ? [...this.#letters] : this.#letters.filter((letter) => letter.queue === queue);
  }

  #remove(letters: readonly KeptLetter[]): void {
    const gone = new Set(letters);
    const kept = this.#letters.filter((letter) => !gone.has(letter));
    this.#letters.splice(0, this.#letters.length, ...kept);
  }
}
