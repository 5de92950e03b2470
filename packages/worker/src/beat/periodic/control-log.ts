import { hostname } from 'node:os';
import { Queue } from '@kq/core';
import type { AppContract } from '../../contract/app-contract';
import type { Logger } from '../../log/logger';
import type { PeriodicMeta } from './periodic-meta';

/**
 * Lifecycle events of a periodic task's runs:
 * `created` (a new cycle), `sent` (a run or retry was scheduled), `started`, `done`, `failed` (an attempt failed;
 * `retry` says whether another follows), `dead` (the run failed past its attempts and was parked), `dropped` (a
 * duplicate or superseded message was discarded), `deferred` (another copy holds the step; retried later),
 * `stopped` (the cycle was ended).
 */
export type PeriodicEvent = 'created' | 'sent' | 'started' | 'done' | 'failed' | 'dead' | 'dropped' | 'deferred' | 'stopped';

/** One record of the control queue (a JSON message). */
export interface PeriodicRecord {
  task: string;
  event: PeriodicEvent;
  cycle: string;
  step: number;
  run: number;
  attempt: number;
  /** When the record was written (ISO 8601). */
  at: string;
  /** When the message is (or was) due (ISO 8601). */
  due: string;
  /** The worker (process) that wrote it. */
  by: string;
  taskId?: string;
  runtime?: number;
  retry?: boolean;
  reason?: string;
  error?: { type: string; message: string };
}

/** Records are trimmed to `maxLength` every this many writes on transports that do not enforce `x-max-length`. */
const TRIM_EVERY = 25;

/**
 * Writes a periodic task's lifecycle to its control queue (`<name>.periodic.control`), a durable queue capped at
 * `maxLength` records (RabbitMQ enforces `x-max-length`; elsewhere the oldest are dropped every few writes).
 * Recording never fails a run: a record that cannot be written is logged and dropped.
 */
export class ControlLog {
  readonly queue: Queue;
  readonly #app: AppContract;
  readonly #task: string;
  readonly #log: Logger;
  readonly #by = `${process.pid}@${hostname()}`;
  #writes = 0;

  constructor(app: AppContract, task: string, queueName: string, maxLength: number, log: Logger) {
    this.#app = app;
    this.#task = task;
    this.#log = log;
    this.queue = new Queue(queueName, { durable: true, maxLength });
  }

  async record(event: PeriodicEvent, meta: PeriodicMeta, extra: Partial<PeriodicRecord> = {}): Promise<void> {
    const record: PeriodicRecord = {
      task: this.#task,
      event,
      cycle: meta.cycle,
      step: meta.step,
      run: meta.run,
      attempt: meta.attempt,
      at: new Date().toISOString(),
      due: new Date(meta.due).toISOString(),
      by: this.#by,
      ...extra,
    };
    try {
      await this.#app.producer.publish(record, { routingKey: this.queue.name, declare: [this.queue], serializer: 'json', deliveryMode: 2 });
      if (++this.#writes % TRIM_EVERY === 0) await this.#trim();
    } catch (error) {
      this.#log.warning(`Could not record ${event} of ${this.#task} run ${meta.run} in ${this.queue.name}: ${String(error)}`);
    }
  }

  async #trim(): Promise<void> {
    const max = this.queue.maxLength ?? Infinity;
    await this.#app.connection.ensure(async (channel) => {
      let { messageCount } = await channel.checkQueue(this.queue.name);
      while (messageCount > max) {
        if (!(await channel.get(this.queue.name, { noAck: true }))) break;
        messageCount--;
      }
    });
  }
}
