import type { RedisClient } from './connection-factory';
import { loadLuaScript } from './lua-script';

/** One tick's messages as its commit recorded them: envelopes for queue lists, and for fanout channels. */
export interface BeatDelivery {
  /** `[list key, envelope]`: LPUSHed as a publish would. */
  readonly pushes: ReadonlyArray<readonly [string, string]>;
  /** `[channel, envelope, exchange]`: PUBLISHed through the exchange's publisher (see BeatOutboxOptions). */
  readonly broadcasts: ReadonlyArray<readonly [string, string, string]>;
}

export interface BeatOutboxOptions {
  /** The hash holding ticks committed but not yet known to be delivered, in the lease's slot. */
  key: string;
  commands: () => RedisClient;
  /** Where an exchange's PUBLISH goes (one node per exchange on a cluster, so its messages keep their order). */
  publisherFor: (exchange: string) => RedisClient;
}

/** KEYS: outbox. ARGV: field, payload. Deletes the field if it still holds that payload. */
const FORGET = loadLuaScript('beat-outbox-forget');

/**
 * kq beat's outbox on Redis Cluster, where one script cannot record a tick and push its task (the lease's slot and the
 * queue's differ): the commit script records the tick and, beside it, the tick's messages; they are then pushed, and
 * the record removed. A leader that dies in between leaves the record, and the next leader pushes it before its first
 * tick — so a committed tick is sent at least once: twice only if its leader died between the push and the removal,
 * or stalled there past its lease (a leader sends its own records only while its lease is surely its own).
 */
export class BeatOutbox {
  readonly #options: BeatOutboxOptions;

  constructor(options: BeatOutboxOptions) {
    this.#options = options;
  }

  get key(): string {
    return this.#options.key;
  }

  /** The outbox field of a tick: the tick first, so one entry's ticks are distinct records. */
  static field(entry: string, tick: number): string {
    return `${tick}:${entry}`;
  }

  static encode(delivery: BeatDelivery): string {
    return JSON.stringify(delivery);
  }

  /** Sends what a record holds, then removes the record (unless it was rewritten meanwhile). */
  async deliver(field: string, payload: string): Promise<void> {
    const delivery = decode(payload);
    const commands = this.#options.commands();
    for (const [list, envelope] of delivery.pushes) await commands.lpush(list, envelope);
    for (const [channel, envelope, exchange] of delivery.broadcasts) await this.#options.publisherFor(exchange).publish(channel, envelope);
    await FORGET.run(commands, [this.#options.key], [field, payload]);
  }

  /** Every record left, oldest tick first: what a leader that died did not finish sending. */
  async pending(): Promise<Array<[string, string]>> {
    const records = await this.#options.commands().hgetall(this.#options.key);
    return Object.entries(records).sort(([a], [b]) => Number(a.split(':', 1)[0]) - Number(b.split(':', 1)[0]));
  }
}

function decode(payload: string): BeatDelivery {
  const value = JSON.parse(payload) as Partial<BeatDelivery>;
  return { pushes: value.pushes ?? [], broadcasts: value.broadcasts ?? [] };
}
