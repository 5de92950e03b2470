import { KqError, LamportClock } from '@kq/core';
import type { Logger } from '../log/logger';
import { heapPush, type ElectionEntry } from './election-heap';
import type { ElectionHandler } from './gossip-options';

/** What an election round needs of Gossip: who this worker is, how many peers are alive, and how to send. */
export interface ElectionHost {
  /** `hostname.pid`: how elections name this worker. */
  readonly fullHostname: string;
  readonly log: Logger;
  /** Live peers now (this worker aside). */
  alivePeers(): number;
  send(type: 'worker-elect' | 'worker-elect-ack', fields: Record<string, unknown>): void;
  /** Told of every decided election, won or not. */
  elected(id: string, leader: string, topic: string, won: boolean): void;
}

/**
 * Celery's Gossip elections: every live worker that got the `election` command announces itself with `worker-elect`,
 * everybody acknowledges, and the request with the lowest clock wins (`LamportClock.sort_heap`). Python's choice
 * crashes a worker whose heap holds a single request (docs/wire.md#mingle-heartbeats-and-gossip), so a kq worker with
 * no live peer decides alone without sending anything, and one with peers waits for all their requests before
 * deciding, so it never decides on a single entry while others take part.
 */
export class Elections {
  readonly handlers = new Map<string, ElectionHandler>();
  readonly #host: ElectionHost;
  readonly #timeoutMs: number;
  readonly #requests = new Map<string, ElectionEntry[]>();
  readonly #replies = new Map<string, string[]>();
  readonly #deadlines = new Map<string, NodeJS.Timeout>();

  constructor(host: ElectionHost, timeoutMs: number) {
    this.#host = host;
    this.#timeoutMs = timeoutMs;
  }

  /** Starts an election; alone, this worker wins at once without sending anything. */
  start(id: string, topic: string, action: unknown): void {
    if (this.#host.alivePeers() === 0) {
      this.#host.log.info(`I won the election ${JSON.stringify(id)} (no other worker is alive)`);
      this.#host.elected(id, this.#host.fullHostname, topic, true);
      this.#run(id, topic, action);
      return;
    }
    this.#replies.set(id, []);
    this.#host.send('worker-elect', { id, topic, action, cver: 1 });
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
    this.#host.send('worker-elect-ack', { id });
    this.#maybeDecide(id);
  }

  /**
   * A `worker-elect-ack`. Celery decides once it has as many acks as live peers, even if the heap holds only its own
   * request — the case that crashes Python. This waits until every live peer's request is in too, or until the
   * election timeout passes, then decides the way Python does.
   */
  onElectAck(event: Record<string, unknown>): void {
    const id = event['id'];
    if (typeof id !== 'string') return;
    const replies = this.#replies.get(id);
    if (!replies) return; // not an election this worker started
    replies.push(String(event['hostname']));
    this.#maybeDecide(id);
  }

  /** Forgets the elections under way (their deadlines would fire after Gossip stopped). */
  stop(): void {
    for (const timer of this.#deadlines.values()) clearTimeout(timer);
    this.#deadlines.clear();
  }

  #maybeDecide(id: string, force = false): void {
    const replies = this.#replies.get(id);
    if (!replies) return;
    const peers = this.#host.alivePeers();
    const heap = this.#requests.get(id) ?? [];
    if (!force && (replies.length < peers || heap.length < peers + 1)) {
      if (!this.#deadlines.has(id)) {
        const timer = setTimeout(() => this.#maybeDecide(id, true), this.#timeoutMs);
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
    const won = leader === this.#host.fullHostname;
    this.#host.log.info(won ? `I won the election ${JSON.stringify(id)}` : `node ${leader} elected for ${JSON.stringify(id)}`);
    this.#host.elected(id, leader, topic, won);
    if (won) this.#run(id, topic, action);
  }

  #run(id: string, topic: string, action: unknown): void {
    const handler = this.handlers.get(topic);
    if (!handler) {
      this.#host.log.error(`Unknown election topic ${JSON.stringify(topic)} (election ${JSON.stringify(id)})`);
      return;
    }
    Promise.resolve()
      .then(() => handler(action))
      .catch((error: unknown) => this.#host.log.error(`election ${JSON.stringify(id)}: ${error instanceof Error ? error.message : String(error)}`));
  }
}
