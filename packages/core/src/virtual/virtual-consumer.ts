import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChannelClosed, PermissionDenied } from '../errors';
import { backoffCountdown } from '../exponential-backoff';
import { RoundRobinCycle } from '../round-robin-cycle';
import type { Delivery } from '../message';
import type { ConsumeOptions, ConsumerHandle } from '../transport';
import type { VirtualChannelHost } from './virtual-channel-host';
import type { Claim, ClaimOptions, StoredMessage } from './virtual-store';

/** What a consumer uses of its `VirtualChannel` (which implements it), so the two files do not import each other. */
export interface ConsumerChannel {
  readonly transport: VirtualChannelHost;
  claimFor(queues: readonly string[], options: ClaimOptions): Promise<Claim[]>;
  deliver(consumer: VirtualConsumer, claim: Claim, onMessage: (delivery: Delivery) => void): void;
  deliverLive(consumer: VirtualConsumer, queue: string, message: StoredMessage, onMessage: (delivery: Delivery) => void): void;
  subscribeFanout(exchange: string, bindingKey: string, onMessage: (message: StoredMessage) => void): Promise<() => Promise<void>>;
  returnUndelivered(claims: readonly Claim[]): Promise<void>;
  forgetConsumer(consumer: VirtualConsumer): void;
  reportError(error: unknown): void;
}

/** What one claim call brought (early claims were already delivered): the rest, and how many it was asked for. */
interface ClaimBatch {
  claims: Claim[];
  asked: number;
  /** How many the store handed over early, already delivered. */
  early: number;
}

/**
 * One consumer of a `VirtualChannel`: a loop that claims from its queues while it has prefetch room, serving the
 * queues fairly by rotating the last-served one to the back (Kombu's `round_robin_cycle`), and a subscription to
 * the fanout bus for queues bound to live fanout exchanges (Kombu reads those over PUB/SUB, not from lists).
 */
export class VirtualConsumer implements ConsumerHandle {
  readonly tag: string;
  readonly queues: readonly string[];
  readonly #channel: ConsumerChannel;
  readonly #options: ConsumeOptions;
  readonly #cycle: RoundRobinCycle<string>;
  readonly #abort = new AbortController();
  readonly #unsubscribe: Array<() => Promise<void>> = [];
  #prefetch: number;
  #inflight = 0;
  /** Room taken by claims in flight (counted before they resolve, so a look-ahead claim cannot overrun prefetch). */
  #reserved = 0;
  #cancelled = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  constructor(channel: ConsumerChannel, options: ConsumeOptions) {
    this.#channel = channel;
    this.#options = options;
    this.tag = options.consumerTag ?? `kq-${randomUUID()}`;
    this.queues = [...options.queues];
    this.#prefetch = Math.max(0, Math.trunc(options.prefetch ?? 0));
    this.#cycle = new RoundRobinCycle(this.queues.filter((queue) => !channel.transport.isLiveFanoutQueue(queue)));
  }

  get prefetch(): number {
    return this.#prefetch;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  get noAck(): boolean {
    return this.#options.noAck ?? false;
  }

  async start(): Promise<void> {
    for (const queue of this.queues) {
      for (const binding of this.#channel.transport.liveFanoutBindings(queue)) {
        const unsubscribe = await this.#channel.subscribeFanout(binding.exchange, binding.routingKey, (message) =>
          this.#deliverLive(queue, message),
        );
        this.#unsubscribe.push(unsubscribe);
      }
    }
    if (this.#cycle.size > 0) this.#loop = this.#run();
  }

  async setPrefetch(count: number): Promise<void> {
    this.#prefetch = Math.max(0, Math.trunc(count));
    this.#signal();
  }

  async cancel(): Promise<void> {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#abort.abort();
    this.#signal();
    await Promise.all(this.#unsubscribe.splice(0).map((unsubscribe) => unsubscribe().catch(() => undefined)));
    await this.#loop;
    this.#channel.forgetConsumer(this);
  }

  /** Called by the channel when one of our deliveries is settled: room for one more. */
  settled(): void {
    this.#inflight = Math.max(0, this.#inflight - 1);
    this.#signal();
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #room(): number {
    const batch = this.#channel.transport.batchSize;
    if (this.noAck || this.#prefetch === 0) return batch;
    return Math.min(batch, this.#prefetch - this.#inflight - this.#reserved);
  }

  /**
   * Claims up to `max`, holding that much room while the call is out; claimed messages count as in flight. Claims
   * the store hands over early (see `ClaimOptions.onEarlyClaims`) are delivered at once; `asked` is what the
   * resolved rest was asked for.
   */
  async #claim(max: number, blockMs: number): Promise<ClaimBatch> {
    let held = this.noAck ? 0 : max;
    let asked = max;
    let early = 0;
    this.#reserved += held;
    const onEarlyClaims = (claims: Claim[]): void => {
      asked -= claims.length;
      early += claims.length;
      if (!this.noAck) {
        const taken = Math.min(held, claims.length);
        this.#reserved -= taken;
        held -= taken;
        this.#inflight += claims.length;
      }
      this.#handOut(claims);
    };
    try {
      const claims = await this.#channel.claimFor(this.#cycle.items, {
        max,
        blockMs,
        signal: this.#abort.signal,
        noAck: this.noAck,
        onEarlyClaims,
      });
      if (!this.noAck) this.#inflight += claims.length;
      return { claims, asked, early };
    } finally {
      this.#reserved -= held;
    }
  }

  /** Delivers a batch (or, when cancelled meanwhile, gives it back undelivered). */
  #handOut(claims: readonly Claim[]): void {
    if (this.#cancelled) {
      void this.#channel.returnUndelivered(claims);
      return;
    }
    // Served queues go to the back first, so a claim made ahead already starts from the right queue.
    for (const claim of claims) this.#cycle.rotate(claim.queue);
    this.#deliverAll(claims);
  }

  /**
   * Hands claims to the handler one by one; once a handler cancelled this consumer, the rest of the batch goes back
   * undelivered (unmarked) instead of reaching a consumer that asked for no more.
   */
  #deliverAll(claims: readonly Claim[]): void {
    for (let i = 0; i < claims.length; i++) {
      if (this.#cancelled) {
        void this.#channel.returnUndelivered(claims.slice(i));
        return;
      }
      this.#channel.deliver(this, claims[i] as Claim, this.#options.onMessage);
    }
  }

  async #run(): Promise<void> {
    let failures = 0;
    // A claim made before the current batch was handed out (pipelined stores, when the last batch came back full):
    // the store works on the next batch while this process works on the current one.
    let ahead: Promise<ClaimBatch> | undefined;
    const pipelined = this.#channel.transport.store.features.pipelinedClaims === true;
    while (!this.#cancelled) {
      let batch: ClaimBatch;
      try {
        if (ahead) {
          const pending = ahead;
          ahead = undefined;
          batch = await pending;
        } else {
          const room = this.#room();
          if (room <= 0) {
            await new Promise<void>((resolve) => (this.#wake = resolve));
            continue;
          }
          batch = await this.#claim(room, this.#channel.transport.pollIntervalMs);
        }
        failures = 0;
      } catch (error) {
        if (this.#cancelled) break;
        if (error instanceof ChannelClosed) break;
        this.#channel.reportError(error);
        // The broker's user may not do what consuming needs: retrying would refuse again, and flood the log with it.
        // Said once; the consumer stops, and consumes again once re-created (after the ACL is fixed).
        if (error instanceof PermissionDenied) break;
        // Back off so a broken store does not spin the CPU, but keep consuming: the store may recover.
        failures++;
        await sleep(backoffCountdown(failures, { factor: 50, maximum: 2000, jitter: false }));
        continue;
      }
      const { claims } = batch;
      if (this.#cancelled) {
        // Lost the race with cancel(): these were never handed out, so put them straight back.
        await this.#channel.returnUndelivered(claims);
        break;
      }
      if (pipelined && claims.length > 0 && claims.length === batch.asked) {
        for (const claim of claims) this.#cycle.rotate(claim.queue);
        const room = this.#room();
        if (room > 0) ahead = this.#claim(room, 0);
        this.#deliverAll(claims);
      } else {
        this.#handOut(claims);
      }
      // Yield to the event loop between batches so handlers and timers run under a flood of messages (and the acks
      // they make can ride the next claim), also after a full batch handed over early; not after a wake-up that
      // brought less than was asked for, so an idle consumer is back waiting at once.
      if (claims.length > 0 || (batch.early > 0 && batch.asked === 0)) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (ahead) {
      const late = await ahead.catch((): ClaimBatch => ({ claims: [], asked: 0, early: 0 }));
      await this.#channel.returnUndelivered(late.claims);
    }
  }

  #deliverLive(queue: string, message: StoredMessage): void {
    if (this.#cancelled) return;
    this.#channel.deliverLive(this, queue, message, this.#options.onMessage);
  }
}
