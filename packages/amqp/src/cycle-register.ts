import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCountdown, KqError, OperationTimeout, type CycleAdvance, type CycleBegin, type CycleMarker, type CycleRegister, type CycleState } from '@kq/core';
import type { AmqplibConfirmChannel, AmqplibGetMessage } from './amqplib-loader';
import type { AmqpLeaseHost } from './lease-host';
import { ReplyCode, replyCodeOf } from './amqp-errors';
import { closeWithin } from './close-within';

/*
 * The register of kq periodic tasks on RabbitMQ (core's `CycleRegister` contract, `AmqpTransport.cycleRegister`).
 *
 * RabbitMQ has no compare-and-set, so each operation runs under a broker-side mutex and then reads and rewrites the
 * register:
 *
 *   <key>.periodic.lock      exclusive queue: declaring it succeeds for one connection at a time (others get 405
 *                            RESOURCE_LOCKED); deleted to release — and by the broker when the holder's connection dies
 *   <key>.periodic.register  durable queue holding the register as one persistent JSON message
 *
 * Under the mutex an operation takes every message of the register queue (basic.get), merges them (the highest
 * `version` wins — a crash between "publish the new value" and "ack the old one" leaves both, and the newer is
 * right), publishes the result with a publisher confirm, then acks what it took. A crash before the confirm leaves
 * the old value (the taken messages go back to the queue); after it, the new one. Expiry and claim deadlines are
 * wall-clock times written by the writer, so they assume clocks agree to well within the TTLs (seconds).
 */

interface RegisterValue {
  kq: 'periodic-register';
  version: number;
  cycle: string;
  step: number;
  token: string | null;
  claimUntil: number;
  expiresAt: number;
}

export interface AmqpCycleRegisterOptions {
  /** Longest an operation waits for the mutex, ms. Default 15 000. */
  lockTimeoutMs?: number;
}

/** The lock holder's backoff between attempts, ms (grows to the max, with jitter). */
const LOCK_RETRY_MIN_MS = 10;
const LOCK_RETRY_MAX_MS = 200;
/**
 * After taking the mutex from a holder that crashed, its taken register messages may reach the queue a moment after
 * its lock queue is gone (two queues, two processes in the broker): an empty register is read again after this.
 */
const EMPTY_RECHECK_MS = 150;

/** The register of kq periodic-task cycles on RabbitMQ (see the comment at the top of this file). */
export class AmqpCycleRegister implements CycleRegister {
  readonly kind = 'amqp';
  readonly #transport: AmqpLeaseHost;
  readonly #lockTimeoutMs: number;
  /** Operations of this process on one key run one after another (the broker mutex is per connection). */
  readonly #local = new Map<string, Promise<unknown>>();

  constructor(transport: AmqpLeaseHost, options: AmqpCycleRegisterOptions = {}) {
    this.#transport = transport;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
  }

  /** The queue names of register `key`. */
  queues(key: string): { register: string; lock: string } {
    return { register: `${key}.periodic.register`, lock: `${key}.periodic.lock` };
  }

  create(key: string, marker: CycleMarker, ttlMs: number): Promise<boolean> {
    return this.#update(key, (current, now) => {
      if (current) return { result: false };
      return { result: true, next: { cycle: marker.cycle, step: marker.step, token: null, claimUntil: 0, expiresAt: now + ttlMs } };
    });
  }

  begin(key: string, marker: CycleMarker, token: string, claimMs: number, ttlMs: number): Promise<CycleBegin> {
    return this.#update<CycleBegin>(key, (current, now) => {
      if (!current) return { result: 'absent' };
      if (current.cycle !== marker.cycle) return { result: 'superseded' };
      if (current.step > marker.step) return { result: 'stale' };
      if (current.step === marker.step && current.token !== null && current.token !== token && current.claimUntil > now) return { result: 'busy' };
      return { result: 'current', next: { ...current, step: marker.step, token, claimUntil: now + claimMs, expiresAt: now + ttlMs } };
    });
  }

  advance(key: string, from: CycleMarker, toStep: number, ttlMs: number): Promise<CycleAdvance> {
    return this.#update<CycleAdvance>(key, (current, now) => {
      if (!current) return { result: 'absent' };
      if (current.cycle !== from.cycle) return { result: 'superseded' };
      if (current.step > from.step) return { result: 'stale' };
      return { result: 'advanced', next: { ...current, step: toStep, token: null, claimUntil: 0, expiresAt: now + ttlMs } };
    });
  }

  read(key: string): Promise<CycleState | null> {
    return this.#update(key, (current, now) => ({
      result: current ? { cycle: current.cycle, step: current.step, claimedBy: current.claimUntil > now ? current.token : null } : null,
    }));
  }

  remove(key: string, cycle?: string): Promise<boolean> {
    return this.#update(key, (current) => {
      if (!current || (cycle !== undefined && current.cycle !== cycle)) return { result: false };
      return { result: true, next: null };
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.#local.values()].map((operation) => operation.catch(() => undefined)));
  }

  /**
   * Runs `change` on the current value under the mutex. `next`: undefined = keep the value, null = delete it, a
   * value = write it.
   */
  #update<T>(
    key: string,
    change: (current: Omit<RegisterValue, 'kq' | 'version'> | null, now: number) => { result: T; next?: Omit<RegisterValue, 'kq' | 'version'> | null },
  ): Promise<T> {
    const previous = this.#local.get(key) ?? Promise.resolve();
    const operation = previous.catch(() => undefined).then(() => this.#locked(key, change));
    const tail = operation.catch(() => undefined);
    this.#local.set(key, tail);
    void tail.then(() => {
      if (this.#local.get(key) === tail) this.#local.delete(key);
    });
    return operation;
  }

  async #locked<T>(
    key: string,
    change: (current: Omit<RegisterValue, 'kq' | 'version'> | null, now: number) => { result: T; next?: Omit<RegisterValue, 'kq' | 'version'> | null },
  ): Promise<T> {
    const names = this.queues(key);
    const channel = await this.#lock(names.lock);
    let released = false;
    try {
      await channel.assertQueue(names.register, { durable: true });
      let taken = await takeAll(channel, names.register);
      if (taken.length === 0) {
        await sleep(EMPTY_RECHECK_MS);
        taken = await takeAll(channel, names.register);
      }
      const now = Date.now();
      let current: RegisterValue | null = null;
      for (const message of taken) {
        const value = decodeValue(message.content);
        if (value && (current === null || value.version > current.version)) current = value;
      }
      const live = current && current.expiresAt > now ? current : null;
      const { result, next } = change(live, now);
      const version = (current?.version ?? 0) + 1;
      const value: RegisterValue | null = next === undefined ? live && { ...live, kq: 'periodic-register', version } : next && { ...next, kq: 'periodic-register', version };
      if (value) {
        channel.sendToQueue(names.register, Buffer.from(JSON.stringify(value)), { persistent: true, contentType: 'application/json' });
        await channel.waitForConfirms();
      }
      for (const message of taken) channel.ack(message);
      // The acks ride on the channel; deleting the lock queue after them (same channel, in order) releases the mutex.
      await channel.deleteQueue(names.lock);
      released = true;
      return result;
    } finally {
      await closeWithin(channel);
      if (!released) await this.#forceUnlock(names.lock);
    }
  }

  /** After a failed operation: the lock queue is exclusive to our connection, so only we can (and must) delete it. */
  async #forceUnlock(lock: string): Promise<void> {
    try {
      const connection = await this.#transport.supervisor.connection(1000);
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await channel.deleteQueue(lock).catch(() => undefined);
      await closeWithin(channel);
    } catch {
      // The connection is gone, and the broker deleted the lock with it.
    }
  }

  /** Opens a confirm channel that holds the mutex `lock` (an exclusive queue declared on it). */
  async #lock(lock: string): Promise<AmqplibConfirmChannel> {
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      const connection = await this.#transport.supervisor.connection();
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => undefined);
      try {
        await channel.assertQueue(lock, { exclusive: true, durable: false, autoDelete: false });
        return channel;
      } catch (error) {
        await closeWithin(channel);
        if (replyCodeOf(error) !== ReplyCode.RESOURCE_LOCKED) throw new KqError(`Cannot lock the periodic register ${lock}: ${describe(error)}`, { cause: error });
      }
      if (Date.now() >= deadline) {
        throw new OperationTimeout(`The periodic register lock ${lock} stayed held for ${this.#lockTimeoutMs} ms; is a process stuck holding it?`);
      }
      const backoff = backoffCountdown(attempt, { factor: LOCK_RETRY_MIN_MS, maximum: LOCK_RETRY_MAX_MS, jitter: false });
      await sleep(backoff / 2 + Math.random() * (backoff / 2));
    }
  }
}

async function takeAll(channel: AmqplibConfirmChannel, queue: string): Promise<AmqplibGetMessage[]> {
  const taken: AmqplibGetMessage[] = [];
  // A register holds one message; a few more only after crashes. The bound keeps a polluted queue from looping.
  for (let i = 0; i < 100; i++) {
    const message = await channel.get(queue, { noAck: false });
    if (message === false) break;
    taken.push(message);
  }
  return taken;
}

function decodeValue(body: Buffer): RegisterValue | null {
  try {
    const value = JSON.parse(body.toString('utf8')) as Partial<RegisterValue>;
    if (value.kq !== 'periodic-register' || typeof value.cycle !== 'string' || typeof value.step !== 'number' || typeof value.version !== 'number') return null;
    return {
      kq: 'periodic-register',
      version: value.version,
      cycle: value.cycle,
      step: value.step,
      token: typeof value.token === 'string' ? value.token : null,
      claimUntil: typeof value.claimUntil === 'number' ? value.claimUntil : 0,
      expiresAt: typeof value.expiresAt === 'number' ? value.expiresAt : 0,
    };
  } catch {
    return null;
  }
}


function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
