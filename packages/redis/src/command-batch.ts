import { Command, Redis } from './ioredis-module';
import type { RedisClient } from './connection-factory';

/** One command's answer in a batch, as ioredis's `pipeline().exec()` gives it: the error, or the reply. */
export type BatchReply = [Error | null, unknown];

type Argument = string | Buffer | number;

/**
 * A batch's text is written in pieces of about this many characters (whole commands, one write call for all of them):
 * V8 keeps a string longer than ~128 KB in memory mapped for it alone, so the one string a large batch would make
 * (a claim's records, ~1 KB each) cost fresh pages, faulted in one by one, at every claim: 2.7 ms for 400 records
 * against 0.8 ms in pieces on the benchmark machine. A command this long or longer goes as it is.
 */
export const WRITE_PIECE_CHARS = 32 * 1024;

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
   * `name key ...items` as one command per run of about `WRITE_PIECE_CHARS` characters, whole groups of `stride`
   * items (a field and its value: 2), in order: the batch then writes it in pieces (an HSET of a claim's records,
   * ~1 KB each, or an LPUSH of a bulk publish).
   */
  callInPieces(name: string, key: string, items: readonly string[], stride = 1): this {
    for (const run of inPieces(items, stride)) this.call(name, key, ...run);
    return this;
  }

  /**
   * Sends the batch and answers each command with `[error, reply]`. A transaction rejects as ioredis's does when
   * EXEC fails (a command refused when queued, or the connection lost mid-transaction).
   */
  exec(): Promise<BatchReply[]> {
    const client = this.#client;
    if (!(client instanceof Redis)) return this.#viaPipeline(client);
    const transaction = this.#transaction;
    const size = this.#commands.length + (transaction ? 2 : 0);
    const replies = new BatchReplies(size);
    // Built by a loop into one literal: an array from `map` is of another kind to V8 once the caller is optimized
    // (its own allocation, not the builtin's), and the optimized `exec` was thrown away at the first of those.
    const commands: BatchCommand[] = [];
    if (transaction) commands.push(this.#command('multi', [], replies, 0, size));
    for (const [name, args] of this.#commands) commands.push(this.#command(name, args, replies, commands.length, size));
    if (transaction) commands.push(this.#command('exec', [], replies, commands.length, size));
    const writer = new BatchWriter(client, commands.length);
    // ioredis types `sendCommand`'s second parameter as its own stream; any writer marked `isPipeline` is what it takes.
    for (const command of commands) void client.sendCommand(command, writer as never);
    if (!this.#transaction) return replies.all;
    return replies.all.then((answers) => {
      const [execError, execReply] = answers[answers.length - 1] as BatchReply;
      if (execError) throw execError;
      if (!Array.isArray(execReply)) throw new Error('kq/redis: a transaction was aborted (EXEC answered nil)');
      return execReply.map((reply): BatchReply => (reply instanceof Error ? [reply, undefined] : [null, reply]));
    });
  }

  /** The command at `index` of a batch of `size`, marked as ioredis's Pipeline marks its commands. */
  #command(name: string, args: Argument[], replies: BatchReplies, index: number, size: number): BatchCommand {
    const command = new BatchCommand(name, args, replies, index);
    // On a reconnect, a batch answered in part is aborted rather than resent, and the fragments of a transaction are
    // never run outside it.
    command.pipelineIndex = index;
    if (this.#transaction && index < size - 1) command.inTransaction = true;
    return command;
  }

  async #viaPipeline(client: RedisClient): Promise<BatchReply[]> {
    const pipeline = this.#transaction ? client.multi() : client.pipeline();
    for (const [name, args] of this.#commands) pipeline.call(name, ...args);
    return ((await pipeline.exec()) ?? []) as BatchReply[];
  }
}

/** A batch's answers, each put in its command's place as Redis gives it; one promise for all of them. */
class BatchReplies {
  readonly all: Promise<BatchReply[]>;
  readonly #replies: BatchReply[];
  #pending: number;
  #done!: (replies: BatchReply[]) => void;

  constructor(size: number) {
    this.#replies = new Array<BatchReply>(size);
    this.#pending = size;
    this.all = new Promise((resolve) => {
      this.#done = resolve;
    });
    if (size === 0) this.#done(this.#replies); // nothing to wait for, as Promise.all([]) answers at once
  }

  /** The answer of the command at `place`; the first one counts (a command is answered once, or failed once). */
  settle(place: number, reply: BatchReply): void {
    if (this.#replies[place] !== undefined) return;
    this.#replies[place] = reply;
    if (--this.#pending === 0) this.#done(this.#replies);
  }
}

/** What ioredis's `Command` has and its types keep private, used here as its own methods use them. */
interface CommandInternals {
  transformed: boolean;
  /** Stops a `commandTimeout`'s timer (optional here: called from ioredis's reply handler, it must not throw). */
  _clearTimers?: () => void;
}

/**
 * A command of a batch: its answer goes to its place in the batch, with no promise, no `then` and no closures of its
 * own. An ioredis `Command` makes a promise and two closures when it is built, and a batch then needed a `then` (two
 * more promises under the async hooks a worker's AsyncLocalStorage turns on) to collect each answer: ~1.4 µs a command
 * on the benchmark machine, and a claim sends one `LMOVE` per message. ioredis calls `resolve` and `reject` as methods
 * of the command it took from its queue, so shared functions do; `promise` (what `sendCommand` returns) is the batch's.
 */
class BatchCommand extends Command {
  readonly batch: BatchReplies;
  /** Its place in the batch (not `slot`: a Command keeps its cluster hash slot under that name). */
  readonly place: number;

  constructor(name: string, args: Argument[], batch: BatchReplies, place: number) {
    super(name, args, { replyEncoding: 'utf8' });
    this.batch = batch;
    this.place = place;
    // Set here as well as skipped in `initPromise` below: right even where a later ioredis builds its promise anyway.
    this.resolve = resolveInBatch;
    this.reject = rejectInBatch;
    this.promise = batch.all;
  }
}

// The base constructor calls `initPromise`, which builds the promise and its closures: here only what it does to the
// arguments (numbers to strings, a Buffer to buffer mode). Its argument transformers are left out: they turn an
// object or a Map into fields and values, and a batch's arguments are strings, numbers and Buffers already.
Object.defineProperty(BatchCommand.prototype, 'initPromise', {
  value(this: BatchCommand): void {
    const internals = this as unknown as CommandInternals;
    if (internals.transformed) return;
    internals.transformed = true;
    this.stringifyArguments();
  },
});

function resolveInBatch(this: BatchCommand, value: unknown): void {
  (this as unknown as CommandInternals)._clearTimers?.();
  let reply: unknown;
  try {
    reply = this.transformReply(value as Buffer);
  } catch (error) {
    this.reject(error instanceof Error ? error : new Error(String(error)));
    return;
  }
  this.isResolved = true;
  this.batch.settle(this.place, [null, reply]);
}

function rejectInBatch(this: BatchCommand, error: Error): void {
  (this as unknown as CommandInternals)._clearTimers?.();
  this.batch.settle(this.place, [error instanceof Error ? error : new Error(String(error)), undefined]);
}

/** `items` cut into runs of about `chars` characters, each run whole groups of `stride` items. */
export function inPieces(items: readonly string[], stride = 1, chars = WRITE_PIECE_CHARS): string[][] {
  const runs: string[][] = [];
  let run: string[] = [];
  let size = 0;
  for (let at = 0; at < items.length; at += stride) {
    const end = Math.min(items.length, at + stride);
    let length = 0;
    for (let item = at; item < end; item++) length += (items[item] as string).length;
    if (run.length > 0 && size + length > chars) {
      runs.push(run);
      run = [];
      size = 0;
    }
    for (let item = at; item < end; item++) run.push(items[item] as string);
    size += length;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/**
 * Where ioredis writes a batch's commands (the `stream` its `sendCommand` takes, marked as a pipeline's, as its
 * `Pipeline` does): their text is gathered and written to the connection once every command of the batch has
 * written, whether now, from the offline queue once connected, or again after a reconnect (ioredis resends a batch
 * nobody answered whole, and aborts one answered in part). Gathered in pieces of about `WRITE_PIECE_CHARS`, written
 * corked: one system call for the batch, and no string long enough to need memory of its own.
 */
class BatchWriter {
  readonly isPipeline = true;
  readonly destination: { redis: Redis };
  readonly #size: number;
  #pending: number;
  #text = '';
  #pieces: Array<string | Buffer> = [];

  constructor(client: Redis, size: number) {
    this.destination = { redis: client };
    this.#size = size;
    this.#pending = size;
  }

  write(writable: string | Buffer): boolean {
    if (typeof writable === 'string' && this.#text.length + writable.length <= WRITE_PIECE_CHARS) this.#text += writable;
    else {
      if (this.#text) this.#pieces.push(this.#text);
      this.#text = '';
      if (typeof writable === 'string') this.#text = writable;
      else this.#pieces.push(writable);
    }
    if (--this.#pending > 0) return true;
    if (this.#text) this.#pieces.push(this.#text);
    const pieces = this.#pieces;
    this.#pending = this.#size;
    this.#text = '';
    this.#pieces = [];
    const { stream } = this.destination.redis;
    if (pieces.length === 1) return stream.write(pieces[0] as string | Buffer);
    stream.cork();
    let flowing = true;
    for (const piece of pieces) flowing = stream.write(piece);
    stream.uncork();
    return flowing;
  }
}
