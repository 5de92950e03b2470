import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ConnectionLost,
  Exchange,
  Queue,
  StaleDeliveryError,
  type BindingRecord,
  type Claim,
  type RestoreOptions,
  type ClaimOptions,
  type ExchangeType,
  type StoredMessage,
  type VirtualStore,
  type VirtualStoreFeatures,
} from '@kq/core';
import {
  isMissing,
  readJson,
  removeDirectoryAtomically,
  renameCreatingDirectory,
  unlinkIfPresent,
  writeAtomically,
} from './atomic-files';
import { DirectoryLayout, bucketOf, digest } from './directory-layout';
import { DirectoryWatch } from './directory-watch';
import { UnreadableMessageFile, decodeMessageFile, encodeMessageFile } from './message-file';
import {
  MessageNameClock,
  asRedelivered,
  delayedName,
  isMessageName,
  isRedeliveredName,
  leaseName,
  parseDelayedName,
  parseLeaseName,
} from './message-names';

export interface FileSystemStoreOptions {
  /**
   * How long a claimed message may go without its lease being renewed before any process puts it back in its
   * queue. A live process renews its leases every third of this, so it only matters when a process died (or
   * its event loop stalled that long). Default 30 000 ms.
   */
  visibilityTimeoutMs?: number;
  /**
   * How often this process renews its leases. Default a third of `visibilityTimeoutMs`. Longer than the visibility
   * timeout makes a process whose leases run out while it holds them (what the conformance suite's fencing check
   * needs: a process frozen by a pause).
   */
  leaseRenewIntervalMs?: number;
  /** Longest a blocked claim goes without looking at the directories, in case a change notification was missed. Default 250 ms. */
  pollFallbackMs?: number;
  /** fsync every message file before it becomes visible (survives power loss, costs throughput). Default false. */
  sync?: boolean;
  /** Problems no caller is waiting for: an unreadable file set aside, a lease lost to another process. */
  onProblem?: (error: Error) => void;
}

/** A claimed message: the lease file that holds it and what is needed to settle it. */
class FileClaim implements Claim {
  readonly queue: string;
  readonly message: StoredMessage;
  readonly bucket: number;
  /** The name it had in `ready/`; restoring to the head gives it this name back. */
  readonly messageName: string;
  /** Where the lease file is now (renewing a lease renames it). */
  leasePath: string;
  /** Another process took the message back after our lease ran out. */
  lost = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(queue: string, message: StoredMessage, bucket: number, messageName: string, leasePath: string) {
    this.queue = queue;
    this.message = message;
    this.bucket = bucket;
    this.messageName = messageName;
    this.leasePath = leasePath;
  }

  /** Runs lease renewals and settles of this claim one at a time (both rename or remove the lease file). */
  exclusive<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(operation);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/**
 * A claim without acks: its file is gone once taken. What it held is kept, so a claim never handed out (its consumer
 * was cancelled mid-batch) can be written back rather than lost.
 */
class TakenClaim implements Claim {
  constructor(
    readonly queue: string,
    readonly message: StoredMessage,
    readonly bucket: number,
    readonly messageName: string,
  ) {}
}

type StoreState = 'closed' | 'open' | 'abandoned';

interface ExchangeFile {
  name: string;
  type: ExchangeType;
  durable: boolean;
  autoDelete: boolean;
  internal: boolean;
  deliveryMode: 1 | 2 | null;
  arguments: Record<string, unknown>;
}

interface QueueFile {
  name: string;
  durable: boolean;
  exclusive: boolean;
  autoDelete: boolean;
  maxPriority?: number;
  messageTtl?: number;
  expires?: number;
  deadLetterExchange?: string;
  deadLetterRoutingKey?: string;
  maxLength?: number;
  maxLengthBytes?: number;
  queueType?: 'classic' | 'quorum';
  arguments: Record<string, unknown>;
}

/**
 * A `VirtualStore` on a directory tree, shared by every process on the machine that opens the same root:
 *
 * - a message is a file in `queues/<q>/ready/p<bucket>/`, named so that lexical order is FIFO order;
 * - a consumer claims it by `rename` into `claimed/` — atomic, so exactly one process wins each message;
 * - ack removes the lease file; restore renames it back (to the head: its original name; to the tail: a new one);
 * - a live process renews its leases; a lease older than the visibility timeout belongs to a dead process and
 *   any claimer puts the message back (crash recovery without a server);
 * - delayed messages wait in `delayed/` under their due time and are moved to `ready/` by whoever claims next;
 * - exchanges, bindings and queue declarations are JSON files written atomically (temp file + rename).
 */
export class FileSystemStore implements VirtualStore {
  readonly features: VirtualStoreFeatures = {
    priorities: true,
    delayedDelivery: true,
    crashRecovery: true,
    fanout: 'queued',
  };
  readonly layout: DirectoryLayout;
  /** Identifies this store's leases among those of other processes. */
  readonly owner = randomBytes(6).toString('hex');
  readonly visibilityTimeoutMs: number;
  readonly leaseRenewIntervalMs: number;
  readonly pollFallbackMs: number;
  readonly #sync: boolean;
  readonly #onProblem: ((error: Error) => void) | undefined;
  readonly #names = new MessageNameClock();
  readonly #held = new Set<FileClaim>();
  readonly #lastRecovery = new Map<string, number>();
  #state: StoreState = 'closed';
  #stop = new AbortController();
  #renewTimer: NodeJS.Timeout | undefined;

  constructor(root: string, options: FileSystemStoreOptions = {}) {
    this.layout = new DirectoryLayout(root);
    this.visibilityTimeoutMs = Math.max(100, options.visibilityTimeoutMs ?? 30_000);
    this.leaseRenewIntervalMs = Math.max(50, options.leaseRenewIntervalMs ?? Math.floor(this.visibilityTimeoutMs / 3));
    this.pollFallbackMs = Math.max(5, options.pollFallbackMs ?? 250);
    this.#sync = options.sync ?? false;
    this.#onProblem = options.onProblem;
  }

  /** Claims this store holds and has not settled. */
  get heldCount(): number {
    return this.#held.size;
  }

  async open(): Promise<void> {
    if (this.#state === 'abandoned') throw this.#abandonedError();
    const { layout } = this;
    for (const directory of [layout.tmp, layout.queuesDir, layout.exchangesDir, layout.bindingsRoot]) {
      await mkdir(directory, { recursive: true });
    }
    this.#stop = new AbortController();
    this.#state = 'open';
    this.#renewTimer = setInterval(() => void this.#renewLeases(), this.leaseRenewIntervalMs);
    this.#renewTimer.unref();
  }

  async close(): Promise<void> {
    if (this.#state === 'open') this.#state = 'closed';
    this.#halt();
  }

  /**
   * Stops this store the way a crash would: every later call fails with `ConnectionLost`, leases are no longer
   * renewed, and the claimed files stay where they are until their visibility timeout hands them to others.
   */
  abandon(): void {
    this.#state = 'abandoned';
    this.#held.clear();
    this.#halt();
  }

  // ——— exchanges and bindings ———

  async declareExchange(exchange: Exchange): Promise<void> {
    this.#assertOpen();
    await writeAtomically(this.layout.tmp, this.layout.exchangeFile(exchange.name), JSON.stringify(exchange.toJSON()), this.#sync);
  }

  async lookupExchange(name: string): Promise<Exchange | undefined> {
    this.#assertOpen();
    const file = await readJson<ExchangeFile>(this.layout.exchangeFile(name));
    if (!file) return undefined;
    return new Exchange(name, {
      type: file.type,
      durable: file.durable,
      autoDelete: file.autoDelete,
      internal: file.internal,
      ...(file.deliveryMode ? { deliveryMode: file.deliveryMode } : {}),
      arguments: file.arguments ?? {},
    });
  }

  async deleteExchange(name: string): Promise<void> {
    this.#assertOpen();
    await unlinkIfPresent(this.layout.exchangeFile(name));
    await removeDirectoryAtomically(this.layout.tmp, this.layout.bindingsDir(name));
  }

  async addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    this.#assertOpen();
    await writeAtomically(this.layout.tmp, this.#bindingFile(exchange, binding), JSON.stringify(binding), this.#sync);
  }

  async removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    this.#assertOpen();
    await unlinkIfPresent(this.#bindingFile(exchange, binding));
  }

  async listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    this.#assertOpen();
    const directory = this.layout.bindingsDir(exchange);
    const files = await listDirectory(directory);
    const records = await Promise.all(files.map((file) => readJson<BindingRecord>(join(directory, file))));
    return records.filter((record): record is BindingRecord => record !== undefined && typeof record.queue === 'string');
  }

  // ——— queues ———

  async declareQueue(queue: Queue): Promise<void> {
    this.#assertOpen();
    await this.#createQueueDirectories(queue.name);
    const file: QueueFile = {
      name: queue.name,
      durable: queue.durable,
      exclusive: queue.exclusive,
      autoDelete: queue.autoDelete,
      ...definedOnly({
        maxPriority: queue.maxPriority,
        messageTtl: queue.messageTtl,
        expires: queue.expires,
        deadLetterExchange: queue.deadLetterExchange,
        deadLetterRoutingKey: queue.deadLetterRoutingKey,
        maxLength: queue.maxLength,
        maxLengthBytes: queue.maxLengthBytes,
        queueType: queue.queueType,
      }),
      arguments: { ...queue.extraArguments },
    };
    await writeAtomically(this.layout.tmp, this.layout.queueFile(queue.name), JSON.stringify(file), this.#sync);
  }

  async lookupQueue(name: string): Promise<Queue | undefined> {
    this.#assertOpen();
    const file = await readJson<QueueFile>(this.layout.queueFile(name));
    if (!file) return undefined;
    const { name: _name, arguments: args, ...options } = file;
    return new Queue(name, { ...options, arguments: args ?? {} });
  }

  async queueExists(name: string): Promise<boolean> {
    this.#assertOpen();
    try {
      return (await stat(this.layout.queueDir(name))).isDirectory();
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async deleteQueue(name: string): Promise<number> {
    this.#assertOpen();
    const count = await this.#readyCount(name);
    await removeDirectoryAtomically(this.layout.tmp, this.layout.queueDir(name));
    // As on AMQP, the queue's bindings go with it.
    const prefix = `${digest(name)}.`;
    for (const exchangeDir of await listDirectory(this.layout.bindingsRoot)) {
      const directory = join(this.layout.bindingsRoot, exchangeDir);
      for (const file of await listDirectory(directory)) {
        if (file.startsWith(prefix)) await unlinkIfPresent(join(directory, file));
      }
    }
    return count;
  }

  async purgeQueue(name: string): Promise<number> {
    this.#assertOpen();
    let count = 0;
    for (const bucket of await this.#bucketsOf(name)) {
      const directory = this.layout.bucketDir(name, bucket);
      for (const file of await listDirectory(directory)) {
        // A file a consumer renamed away first is not ours to count.
        if (isMessageName(file) && (await unlinkIfPresent(join(directory, file)))) count++;
      }
    }
    return count;
  }

  async queueSize(name: string): Promise<number> {
    this.#assertOpen();
    await this.#promoteDue(name);
    return this.#readyCount(name);
  }

  // ——— messages ———

  async push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    this.#assertOpen();
    const target = join(this.layout.bucketDir(queue, priority), this.#names.next(message.redelivered));
    await writeAtomically(this.layout.tmp, target, encodeMessageFile(message), this.#sync);
  }

  async pushDelayed(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void> {
    this.#assertOpen();
    const name = delayedName({ dueAt, bucket: priority, messageName: this.#names.next(message.redelivered) });
    await writeAtomically(this.layout.tmp, join(this.layout.delayedDir(queue), name), encodeMessageFile(message), this.#sync);
  }

  async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    this.#assertOpen();
    const deadline = Date.now() + Math.max(0, options.blockMs);
    const max = Math.max(1, options.max);
    for (;;) {
      const nextDue = await this.#maintain(queues);
      const claims = await this.#take(queues, max, options.noAck);
      if (claims.length > 0 || options.blockMs <= 0 || options.signal?.aborted || this.#state !== 'open') return claims;
      // Watch first, then look once more: a message that landed in between is not left waiting for the poll.
      const watch = new DirectoryWatch(await this.#watchedDirectories(queues));
      try {
        const late = await this.#take(queues, max, options.noAck);
        if (late.length > 0) return late;
        const now = Date.now();
        if (now >= deadline) return [];
        const untilDue = nextDue === undefined ? Number.POSITIVE_INFINITY : Math.max(0, nextDue - now);
        await watch.wait(Math.min(deadline - now, this.pollFallbackMs, untilDue), options.signal, this.#stop.signal);
      } finally {
        watch.close();
      }
      if (options.signal?.aborted || this.#state !== 'open') return [];
    }
  }

  ack(claim: Claim): Promise<void> {
    const fileClaim = this.#own(claim);
    return fileClaim.exclusive(async () => {
      this.#assertOpen();
      this.#held.delete(fileClaim);
      if (fileClaim.lost || !(await unlinkIfPresent(fileClaim.leasePath))) throw this.#staleError(fileClaim, 'ack');
    });
  }

  restore(claim: Claim, position: 'head' | 'tail', options: RestoreOptions = {}): Promise<void> {
    // A claim never handed to a consumer (read ahead, then cancelled) goes back unmarked.
    const redelivered = options.redelivered !== false;
    if (claim instanceof TakenClaim) return this.#writeBack(claim, position, redelivered);
    const fileClaim = this.#own(claim);
    return fileClaim.exclusive(async () => {
      this.#assertOpen();
      this.#held.delete(fileClaim);
      if (fileClaim.lost) throw this.#staleError(fileClaim, 'restore');
      // Head: its old name, which sorts before everything published after it. Tail: a new name, sorting last.
      const name =
        position === 'head' ? (redelivered ? asRedelivered(fileClaim.messageName) : fileClaim.messageName) : this.#names.next(redelivered);
      const target = join(this.layout.bucketDir(fileClaim.queue, fileClaim.bucket), name);
      try {
        await rename(fileClaim.leasePath, target);
      } catch (error) {
        if (!isMissing(error)) throw error;
        if (!(await exists(fileClaim.leasePath))) throw this.#staleError(fileClaim, 'restore');
        await renameCreatingDirectory(fileClaim.leasePath, target);
      }
    });
  }

  /**
   * A no-ack claim's message, whose file the claim removed, is written again: at the head under its old name (back
   * where it was), at the tail under a new one. Not into a queue deleted meanwhile.
   */
  async #writeBack(claim: TakenClaim, position: 'head' | 'tail', redelivered: boolean): Promise<void> {
    if (!(await this.queueExists(claim.queue))) return;
    const name = position === 'head' ? (redelivered ? asRedelivered(claim.messageName) : claim.messageName) : this.#names.next(redelivered);
    await writeAtomically(this.layout.tmp, join(this.layout.bucketDir(claim.queue, claim.bucket), name), encodeMessageFile(claim.message), this.#sync);
  }

  // ——— internals ———

  /** Takes up to `max` messages: lowest bucket first, then queue order, a served queue moving to the back. */
  async #take(queues: readonly string[], max: number, noAck: boolean): Promise<Claim[]> {
    const order = [...new Set(queues)];
    const bucketsByQueue = new Map<string, number[]>();
    for (const queue of order) bucketsByQueue.set(queue, await this.#bucketsOf(queue));
    const buckets = [...new Set([...bucketsByQueue.values()].flat())].sort((a, b) => a - b);
    const listings = new Map<string, string[]>();
    const listing = async (queue: string, bucket: number): Promise<string[]> => {
      const key = `${bucket}\u0000${queue}`;
      let names = listings.get(key);
      if (!names) {
        names = bucketsByQueue.get(queue)?.includes(bucket)
          ? (await listDirectory(this.layout.bucketDir(queue, bucket))).filter(isMessageName).sort()
          : [];
        listings.set(key, names);
      }
      return names;
    };
    const taken: Claim[] = [];
    search: while (taken.length < max) {
      for (const bucket of buckets) {
        for (const queue of order) {
          const names = await listing(queue, bucket);
          while (names.length > 0) {
            const claim = await this.#claimFile(queue, bucket, names.shift() as string, noAck);
            if (!claim) continue;
            taken.push(claim);
            order.splice(order.indexOf(queue), 1);
            order.push(queue);
            continue search;
          }
        }
      }
      break;
    }
    return taken;
  }

  /** Renames one ready file into `claimed/`. Undefined when another process was faster (or the file was bad). */
  async #claimFile(queue: string, bucket: number, name: string, noAck: boolean): Promise<Claim | undefined> {
    const source = join(this.layout.bucketDir(queue, bucket), name);
    const leasePath = join(this.layout.claimedDir(queue), leaseName({ leasedAt: Date.now(), owner: this.owner, bucket, messageName: name }));
    try {
      await rename(source, leasePath);
    } catch (error) {
      if (!isMissing(error)) throw error;
      // Lost the race — or `claimed/` does not exist yet (a queue created by publishing to it).
      if (!(await exists(source))) return undefined;
      await mkdir(this.layout.claimedDir(queue), { recursive: true });
      try {
        await rename(source, leasePath);
      } catch (retryError) {
        if (isMissing(retryError)) return undefined;
        throw retryError;
      }
    }
    let message: StoredMessage;
    try {
      message = decodeMessageFile(await readFile(leasePath), isRedeliveredName(name));
    } catch (error) {
      if (!(error instanceof UnreadableMessageFile)) throw error;
      // Never lose a file, never crash a consumer on one: set it aside for a human and carry on.
      await renameCreatingDirectory(leasePath, join(this.layout.quarantineDir(queue), name)).catch(() => undefined);
      this.#onProblem?.(new Error(`Set aside ${name} of queue ${JSON.stringify(queue)} in quarantine/: ${error.message}`));
      return undefined;
    }
    if (noAck) {
      await unlinkIfPresent(leasePath);
      return new TakenClaim(queue, message, bucket, name);
    }
    const claim = new FileClaim(queue, message, bucket, name, leasePath);
    this.#held.add(claim);
    return claim;
  }

  /**
   * Housekeeping before a claim: moves due delayed messages to `ready/` and (now and then) takes back messages
   * whose lease expired. Resolves to when the next delayed message falls due, if any.
   */
  async #maintain(queues: readonly string[]): Promise<number | undefined> {
    let nextDue: number | undefined;
    for (const queue of queues) {
      const due = await this.#promoteDue(queue);
      if (due !== undefined) nextDue = nextDue === undefined ? due : Math.min(nextDue, due);
      const last = this.#lastRecovery.get(queue) ?? 0;
      if (Date.now() - last >= Math.max(50, this.visibilityTimeoutMs / 4)) {
        this.#lastRecovery.set(queue, Date.now());
        await this.#recoverExpired(queue);
      }
    }
    return nextDue;
  }

  /** Moves delayed messages whose time has come into `ready/`, in due order. Resolves to the next due time. */
  async #promoteDue(queue: string): Promise<number | undefined> {
    const directory = this.layout.delayedDir(queue);
    for (const file of (await listDirectory(directory)).sort()) {
      const entry = parseDelayedName(file);
      if (!entry) continue;
      if (entry.dueAt > Date.now()) return entry.dueAt;
      // Stamped with the due time, so it takes its place among messages published around then.
      const name = this.#names.next(isRedeliveredName(entry.messageName), entry.dueAt);
      try {
        await renameCreatingDirectory(join(directory, file), join(this.layout.bucketDir(queue, entry.bucket), name));
      } catch (error) {
        if (!isMissing(error)) throw error;
        // Another process promoted it first.
      }
    }
    return undefined;
  }

  /** Puts messages whose lease is older than the visibility timeout back at the head of their queue. */
  async #recoverExpired(queue: string): Promise<void> {
    const directory = this.layout.claimedDir(queue);
    const expiredBefore = Date.now() - this.visibilityTimeoutMs;
    const ours = new Set([...this.#held].map((claim) => claim.leasePath));
    for (const file of await listDirectory(directory)) {
      const lease = parseLeaseName(file);
      if (!lease || lease.leasedAt >= expiredBefore || ours.has(join(directory, file))) continue;
      try {
        await renameCreatingDirectory(join(directory, file), join(this.layout.bucketDir(queue, lease.bucket), asRedelivered(lease.messageName)));
      } catch (error) {
        if (!isMissing(error)) throw error;
        // Acked, renewed or recovered by someone else meanwhile.
      }
    }
  }

  /** Renews every lease we hold by renaming it to a fresh lease time (atomic: it either wins or finds it gone). */
  async #renewLeases(): Promise<void> {
    if (this.#state !== 'open') return;
    await Promise.all(
      [...this.#held].map((claim) =>
        claim.exclusive(async () => {
          if (claim.lost || !this.#held.has(claim) || this.#state !== 'open') return;
          const renewed = join(
            this.layout.claimedDir(claim.queue),
            leaseName({ leasedAt: Date.now(), owner: this.owner, bucket: claim.bucket, messageName: claim.messageName }),
          );
          try {
            await rename(claim.leasePath, renewed);
            claim.leasePath = renewed;
          } catch (error) {
            if (!isMissing(error)) return;
            claim.lost = true;
            this.#held.delete(claim);
            this.#onProblem?.(this.#staleError(claim, 'renew'));
          }
        }),
      ),
    );
  }

  async #bucketsOf(queue: string): Promise<number[]> {
    return (await listDirectory(this.layout.readyDir(queue)))
      .map(bucketOf)
      .filter((bucket): bucket is number => bucket !== undefined)
      .sort((a, b) => a - b);
  }

  async #readyCount(queue: string): Promise<number> {
    let count = 0;
    for (const bucket of await this.#bucketsOf(queue)) {
      count += (await listDirectory(this.layout.bucketDir(queue, bucket))).filter(isMessageName).length;
    }
    return count;
  }

  async #watchedDirectories(queues: readonly string[]): Promise<string[]> {
    const directories: string[] = [];
    for (const queue of queues) {
      directories.push(this.layout.readyDir(queue));
      for (const bucket of await this.#bucketsOf(queue)) directories.push(this.layout.bucketDir(queue, bucket));
    }
    return directories;
  }

  async #createQueueDirectories(queue: string): Promise<void> {
    for (const directory of [this.layout.readyDir(queue), this.layout.claimedDir(queue), this.layout.delayedDir(queue)]) {
      await mkdir(directory, { recursive: true });
    }
  }

  #bindingFile(exchange: string, binding: BindingRecord): string {
    const key = `${binding.routingKey}\u0000${canonicalJson(binding.arguments)}`;
    return join(this.layout.bindingsDir(exchange), `${digest(binding.queue)}.${digest(key)}.json`);
  }

  #own(claim: Claim): FileClaim {
    if (!(claim instanceof FileClaim)) {
      throw new TypeError('This claim was not made by this FileSystemStore (noAck claims need no settling).');
    }
    return claim;
  }

  #assertOpen(): void {
    if (this.#state === 'abandoned') throw this.#abandonedError();
    if (this.#state === 'closed') {
      throw new ConnectionLost(`The file system store at ${this.layout.root} is closed; connect the transport again.`);
    }
  }

  #abandonedError(): ConnectionLost {
    return new ConnectionLost(`The file system store at ${this.layout.root} was abandoned; make a new transport to use it again.`);
  }

  #staleError(claim: FileClaim, action: string): StaleDeliveryError {
    return new StaleDeliveryError(
      `Cannot ${action} message ${claim.message.deliveryTag} of queue ${JSON.stringify(claim.queue)}: its lease was taken back ` +
        `(visibility timeout ${this.visibilityTimeoutMs} ms, or the queue was deleted), so another consumer may have it. ` +
        `Raise visibilityTimeoutMs if this process can stall that long.`,
    );
  }

  #halt(): void {
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    this.#stop.abort();
  }
}

/** Entries of a directory; a missing directory is empty. */
async function listDirectory(directory: string): Promise<string[]> {
  try {
    return await readdir(directory);
  } catch (error) {
    if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

function definedOnly<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** JSON with object keys sorted, so equal binding arguments give equal file names. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
