import { Command, Redis } from 'ioredis';
import type { RedisClient } from './connection-factory';

/** One command's answer in a batch, as ioredis's `pipeline().exec()` gives it: the error, or the reply. */
export type BatchReply = [Error | null, unknown];

type Argument = string | Buffer | number;

/**
 * Commands for one connection, sent in one write and answered in order, as ioredis's `pipeline()` and `multi()`
 * (a transaction) send them, without ioredis's `Pipeline`. That class's constructor gives every instance its own
 * `length` accessor; the accessor's closure holds the pipeline, and the old-generation descriptor that holds the
 * closure outlives the young generation's collections, so every pipeline of a claim loop (its commands, their text
 * and every reply) was copied by each scavenge and promoted, half of what a drain allocated
 * (bench/PROFILE-redis.md). A Redis Cluster client, which routes a pipeline by slot, still gets ioredis's.
 */
export class CommandBatch {
  readonly #client: RedisClient;
  readonly #transaction: boolean;
  readonly #commands: Array<[string, Argument[]]> = [];

  /** With `transaction`, the commands run between MULTI and EXEC, and `exec` answers with EXEC's replies. */
  constructor(client: RedisClient, options: { transaction?: boolean } = {}) {
    this.#client = client;
    this.#transaction = options.transaction === true;
  }

  call(name: string, ...args: Argument[]): this {
    this.#commands.push([name, args]);
    return this;
  }

  /**
   * Sends the batch and answers each command with `[error, reply]`. A transaction rejects as ioredis's does when
   * EXEC fails (a command refused when queued, or the connection lost mid-transaction).
   */
  exec(): Promise<BatchReply[]> {
    const client = this.#client;
    if (!(client instanceof Redis)) return this.#viaPipeline(client);
    const entries: Array<[string, Argument[]]> = this.#transaction ? [['multi', []], ...this.#commands, ['exec', []]] : this.#commands;
    const commands = entries.map(([name, args], index) => {
      const command = new Command(name, args, { replyEncoding: 'utf8' });
      // As ioredis's Pipeline marks them: on a reconnect, a batch answered in part is aborted rather than resent, and
      // the fragments of a transaction are never run outside it.
      command.pipelineIndex = index;
      if (this.#transaction && index < entries.length - 1) command.inTransaction = true;
      return command;
    });
    const answers = commands.map((command) =>
      command.promise.then(
        (reply): BatchReply => [null, reply],
        (error: unknown): BatchReply => [error instanceof Error ? error : new Error(String(error)), undefined],
      ),
    );
    const writer = new BatchWriter(client, commands.length);
    // ioredis types `sendCommand`'s second parameter as its own stream; any writer marked `isPipeline` is what it takes.
    for (const command of commands) void client.sendCommand(command, writer as never);
    const all = Promise.all(answers);
    if (!this.#transaction) return all;
    return all.then((replies) => {
      const [execError, execReply] = replies[replies.length - 1] as BatchReply;
      if (execError) throw execError;
      if (!Array.isArray(execReply)) throw new Error('kq/redis: a transaction was aborted (EXEC answered nil)');
      return execReply.map((reply): BatchReply => (reply instanceof Error ? [reply, undefined] : [null, reply]));
    });
  }

  async #viaPipeline(client: RedisClient): Promise<BatchReply[]> {
    const pipeline = this.#transaction ? client.multi() : client.pipeline();
    for (const [name, args] of this.#commands) pipeline.call(name, ...args);
    return ((await pipeline.exec()) ?? []) as BatchReply[];
  }
}

/**
 * Where ioredis writes a batch's commands (the `stream` its `sendCommand` takes, marked as a pipeline's, as its
 * `Pipeline` does): their text is joined and written to the connection once every command of the batch has written,
 * whether now, from the offline queue once connected, or again after a reconnect (ioredis resends a batch nobody
 * answered whole, and aborts one answered in part).
 */
class BatchWriter {
  readonly isPipeline = true;
  readonly destination: { redis: Redis };
  readonly #size: number;
  #pending: number;
  #text = '';
  #buffers: Buffer[] | undefined;

  constructor(client: Redis, size: number) {
    this.destination = { redis: client };
    this.#size = size;
    this.#pending = size;
  }

  write(writable: string | Buffer): boolean {
    if (typeof writable === 'string') this.#text += writable;
    else {
      this.#buffers ??= [];
      if (this.#text) this.#buffers.push(Buffer.from(this.#text, 'utf8'));
      this.#text = '';
      this.#buffers.push(writable);
    }
    if (--this.#pending > 0) return true;
    const buffers = this.#buffers;
    if (buffers && this.#text) buffers.push(Buffer.from(this.#text, 'utf8'));
    const joined = buffers ? Buffer.concat(buffers) : this.#text;
    this.#pending = this.#size;
    this.#text = '';
    this.#buffers = undefined;
    return this.destination.redis.stream.write(joined);
  }
}
