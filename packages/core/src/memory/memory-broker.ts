import Denque from 'denque';
import { brandClass } from '../class-brand';
import type { Exchange } from '../exchange';
import type { Queue } from '../queue';
import type { BindingRecord } from '../routing';
import type { DelayedCount } from '../transport';
import { VIRTUAL_MAX_PRIORITY } from '../virtual/priority-steps';
import type { StoredMessage } from '../virtual/virtual-store';
import { MemoryDeadLetters } from './memory-dead-letters';

export interface MemoryClaim {
  readonly queue: string;
  readonly message: StoredMessage;
  readonly priority: number;
}

interface MemoryQueue {
  /** One deque per priority value 0..9; only the step values are used. */
  readonly buckets: Denque<StoredMessage>[];
  declaration: Queue | undefined;
}

interface Waiter {
  readonly queues: ReadonlySet<string>;
  /** Tries to take; returns true when the waiter is satisfied and must be removed. */
  readonly poke: () => boolean;
}

const brokers = new Map<string, MemoryBroker>();

/**
 * The state of one in-process broker, shared by every `MemoryTransport` that names it — like Kombu's memory
 * transport, whose state is global to the process. `memory://` is the broker named `default`.
 */
export class MemoryBroker {
  readonly name: string;
  readonly exchanges = new Map<string, Exchange>();
  readonly bindings = new Map<string, BindingRecord[]>();
  /** Messages rejected from a queue without a dead-letter exchange (see `MemoryDeadLetters`). */
  readonly deadLetters = new MemoryDeadLetters((queue, message, priority) => this.put(queue, message, priority, 'tail'));
  readonly #queues = new Map<string, MemoryQueue>();
  readonly #waiters: Waiter[] = [];
  /** Delayed messages, by their timer, with the queue each is for: held by the broker, not by the transport that published them. */
  readonly #delayed = new Map<NodeJS.Timeout, string>();

  constructor(name: string) {
    this.name = name;
  }

  /** The process-wide broker with this name, created on first use. */
  static named(name = 'default'): MemoryBroker {
    let broker = brokers.get(name);
    if (!broker) {
      broker = new MemoryBroker(name);
      brokers.set(name, broker);
    }
    return broker;
  }

  /** Forget a named broker and everything in it (tests use this for isolation). */
  static reset(name?: string): void {
    const dropped = name === undefined ? [...brokers.values()] : [brokers.get(name)];
    for (const broker of dropped) if (broker) broker.#cancelDelayed();
    if (name === undefined) brokers.clear();
    else brokers.delete(name);
  }

  queue(name: string, create = true): MemoryQueue | undefined {
    let queue = this.#queues.get(name);
    if (!queue && create) {
      queue = {
        buckets: Array.from({ length: VIRTUAL_MAX_PRIORITY + 1 }, () => new Denque<StoredMessage>()),
        declaration: undefined,
      };
      this.#queues.set(name, queue);
    }
    return queue;
  }

  hasQueue(name: string): boolean {
    return this.#queues.has(name);
  }

  deleteQueue(name: string): number {
    const queue = this.#queues.get(name);
    if (!queue) return 0;
    const count = size(queue);
    this.#queues.delete(name);
    // As on AMQP, deleting a queue removes its bindings.
    for (const [exchange, records] of this.bindings) {
      this.bindings.set(
        exchange,
        records.filter((record) => record.queue !== name),
      );
    }
    return count;
  }

  purge(name: string): number {
    const queue = this.#queues.get(name);
    if (!queue) return 0;
    let count = 0;
    for (const bucket of queue.buckets) {
      count += bucket.length;
      bucket.clear();
    }
    return count;
  }

  size(name: string): number {
    const queue = this.#queues.get(name);
    return queue ? size(queue) : 0;
  }

  /** Ready messages per non-empty priority bucket, lowest first. */
  sizesByStep(name: string): Array<{ step: number; messageCount: number }> {
    const queue = this.#queues.get(name);
    if (!queue) return [];
    return queue.buckets.flatMap((bucket, step) => (bucket.length > 0 ? [{ step, messageCount: bucket.length }] : []));
  }

  put(queueName: string, message: StoredMessage, priority: number, position: 'head' | 'tail'): void {
    const queue = this.queue(queueName) as MemoryQueue;
    const bucket = queue.buckets[priority] as Denque<StoredMessage>;
    if (position === 'tail') bucket.push(message);
    else bucket.unshift(message);
    this.#wake(queueName);
  }

  /** Puts the message on the tail of its queue at `dueAt` (epoch ms). The timer does not keep the process alive. */
  putLater(queueName: string, message: StoredMessage, priority: number, dueAt: number): void {
    const timer = setTimeout(() => {
      this.#delayed.delete(timer);
      this.put(queueName, message, priority, 'tail');
    }, Math.max(0, dueAt - Date.now()));
    timer.unref();
    this.#delayed.set(timer, queueName);
  }

  /** The delayed messages not yet due, in all and by the queue they are for. */
  countDelayed(): DelayedCount {
    const byQueue: Record<string, number> = {};
    for (const queue of this.#delayed.values()) byQueue[queue] = (byQueue[queue] ?? 0) + 1;
    return { total: this.#delayed.size, byQueue };
  }

  /** Takes up to `max` messages: lowest bucket first, then queue order, rotating a served queue to the back. */
  take(queues: readonly string[], max: number): MemoryClaim[] {
    const order = [...queues];
    const taken: MemoryClaim[] = [];
    while (taken.length < max) {
      const next = this.#takeOne(order);
      if (!next) break;
      taken.push(next);
      const index = order.indexOf(next.queue);
      order.splice(index, 1);
      order.push(next.queue);
    }
    return taken;
  }

  /** Registers a waiter poked whenever one of its queues gets a message. Returns the function that removes it. */
  wait(queues: readonly string[], poke: () => boolean): () => void {
    const waiter: Waiter = { queues: new Set(queues), poke };
    this.#waiters.push(waiter);
    return () => {
      const index = this.#waiters.indexOf(waiter);
      if (index >= 0) this.#waiters.splice(index, 1);
    };
  }

  #cancelDelayed(): void {
    for (const timer of this.#delayed.keys()) clearTimeout(timer);
    this.#delayed.clear();
  }

  #takeOne(order: readonly string[]): MemoryClaim | undefined {
    for (let priority = 0; priority <= VIRTUAL_MAX_PRIORITY; priority++) {
      for (const name of order) {
        const bucket = this.#queues.get(name)?.buckets[priority];
        if (bucket && bucket.length > 0) {
          return { queue: name, message: bucket.shift() as StoredMessage, priority };
        }
      }
    }
    return undefined;
  }

  #wake(queue: string): void {
    // Oldest waiter first: competing consumers are served in turn.
    for (const waiter of [...this.#waiters]) {
      if (!waiter.queues.has(queue)) continue;
      if (this.size(queue) === 0) return;
      if (waiter.poke()) {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
      }
    }
  }
}
brandClass(MemoryBroker, '@kq/core:MemoryBroker');

function size(queue: MemoryQueue): number {
  let count = 0;
  for (const bucket of queue.buckets) count += bucket.length;
  return count;
}
