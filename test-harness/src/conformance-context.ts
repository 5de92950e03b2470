import { randomBytes } from 'node:crypto';
import {
  Exchange,
  Queue,
  type Channel,
  type Delivery,
  type ExchangeOptions,
  type PublishOptions,
  type QueueOptions,
  type Transport,
  type TransportCapabilities,
} from '@kq/core';
import type { SuiteSetup } from './suite-options';
import { testMessage, type TestMessageExtras } from './test-messages';
import { waitFor, type Description } from './wait-for';

/** How long the suite waits for something that should happen promptly (before `timeoutScale`). */
export const DEFAULT_WAIT_MS = 5_000;

/**
 * Everything one check needs: its own entity names (a unique prefix, so the suite can share a real broker with
 * other runs), transports and channels that are closed afterwards, queues and exchanges that are deleted
 * afterwards, scaled waits, and the broker probe. One context per test.
 */
export class ConformanceContext {
  readonly setup: SuiteSetup;
  /** Every queue and exchange this test declares starts with it. */
  readonly prefix: string;
  readonly #transports: Transport[] = [];
  readonly #crashed = new Set<Transport>();
  readonly #channels: Channel[] = [];
  readonly #scratch = new WeakSet<Channel>();
  readonly #queues = new Set<string>();
  readonly #exchanges = new Set<string>();
  readonly #asyncErrors: string[] = [];
  #primary: Transport | undefined;
  #admin: Channel | undefined;

  constructor(setup: SuiteSetup) {
    this.setup = setup;
    this.prefix = `kqc.${randomBytes(5).toString('hex')}`;
  }

  get capabilities(): TransportCapabilities {
    return this.setup.capabilities;
  }

  /** A base duration scaled by `timeoutScale`. */
  ms(base: number): number {
    return Math.max(1, Math.ceil(base * this.setup.timeoutScale));
  }

  /** This test's name for an entity: `<prefix>.<label>`. */
  name(label: string): string {
    return `${this.prefix}.${label}`;
  }

  /** The test's first transport, connected. */
  async transport(): Promise<Transport> {
    if (!this.#primary) this.#primary = await this.openTransport();
    return this.#primary;
  }

  /** Another connection to the same broker: a second process, as far as the broker can tell (made by `create`). */
  async openTransport(create: () => Transport | Promise<Transport> = this.setup.create): Promise<Transport> {
    const transport = await create();
    this.#transports.push(transport);
    transport.on('error', (error) => this.#noteAsyncError(transport, `transport error: ${error.message}`));
    await transport.connect();
    return transport;
  }

  /** A new channel (on the first transport unless another is given), closed when the test ends. */
  async channel(transport?: Transport): Promise<Channel> {
    const owner = transport ?? (await this.transport());
    const channel = await owner.createChannel();
    this.#channels.push(channel);
    channel.on('error', (error) => {
      if (!this.#scratch.has(channel)) this.#noteAsyncError(owner, `channel error: ${error.message}`);
    });
    return channel;
  }

  /**
   * A channel for an operation that is expected to fail: AMQP closes a channel on a broker error, and whatever
   * it reports asynchronously afterwards is expected too.
   */
  async scratchChannel(transport?: Transport): Promise<Channel> {
    const channel = await this.channel(transport);
    this.#scratch.add(channel);
    return channel;
  }

  /** The channel the suite declares, inspects and cleans up with (reopened if a broker error closed it). */
  async admin(): Promise<Channel> {
    if (!this.#admin?.isOpen) this.#admin = await this.channel();
    return this.#admin;
  }

  /** Declares a queue named `name(label)` and deletes it when the test ends. Resolves to the full name. */
  async declareQueue(label: string, options: QueueOptions = {}): Promise<string> {
    const name = this.name(label);
    this.#queues.add(name);
    for (const binding of options.bindings ?? []) this.#trackExchange(binding.exchange.name);
    if (options.exchange !== undefined) {
      this.#trackExchange(typeof options.exchange === 'string' ? options.exchange : options.exchange.name);
    }
    await (await this.admin()).declareQueue(new Queue(name, options));
    return name;
  }

  /** A queue declared with the priority range the suite publishes in (x-max-priority on AMQP), where supported. */
  priorityQueue(label: string, options: QueueOptions = {}): Promise<string> {
    if (this.capabilities.priorities === null) return this.declareQueue(label, options);
    return this.declareQueue(label, { ...options, maxPriority: this.maxPriorityLevel });
  }

  /** Declares an exchange named `name(label)` and deletes it when the test ends. Resolves to the full name. */
  async declareExchange(label: string, options: ExchangeOptions = {}): Promise<string> {
    const name = this.name(label);
    this.#trackExchange(name);
    await (await this.admin()).declareExchange(new Exchange(name, options));
    return name;
  }

  /** Deletes this queue when the test ends (for queues declared directly on a channel). */
  trackQueue(name: string): void {
    this.#queues.add(name);
  }

  /** The check deleted this queue itself; cleanup need not. */
  forgetQueue(name: string): void {
    this.#queues.delete(name);
  }

  /** Deletes this exchange when the test ends. */
  trackExchange(name: string): void {
    this.#trackExchange(name);
  }

  /** The suite's priority values, lowest first. */
  get priorityLevels(): readonly number[] {
    return this.setup.priorityLevels;
  }

  get maxPriorityLevel(): number {
    return Math.max(0, ...this.setup.priorityLevels);
  }

  /** Ready messages in `queue`: from the probe when there is one, else from `checkQueue`. */
  async depth(queue: string): Promise<number> {
    if (this.setup.probe) return this.setup.probe.queueDepth(queue);
    return (await (await this.admin()).checkQueue(queue)).messageCount;
  }

  /** Waits until `queue` holds exactly `expected` ready messages. */
  async waitForDepth(queue: string, expected: number, baseMs = DEFAULT_WAIT_MS): Promise<void> {
    let last: number | string = 'never read';
    await this.waitFor(
      async () => {
        last = await this.depth(queue);
        return last === expected;
      },
      () => `queue ${queue} to hold ${expected} ready message(s); it holds ${last}`,
      baseMs,
    );
  }

  /** `waitFor` with the suite's scaled timeout. */
  waitFor(predicate: () => boolean | Promise<boolean>, what: Description, baseMs = DEFAULT_WAIT_MS): Promise<void> {
    return waitFor(predicate, this.ms(baseMs), what);
  }

  /** Publishes one message per id (the id is the body), in order, each awaited. */
  async publishIds(
    channel: Channel,
    exchange: string,
    routingKey: string,
    ids: readonly string[],
    extras: TestMessageExtras = {},
    options?: PublishOptions,
  ): Promise<void> {
    for (const id of ids) await channel.publish(exchange, routingKey, testMessage(id, extras), options);
  }

  /** Takes every ready message of `queue` with `get`, settling each with `settle` (ack by default). */
  async drain(
    channel: Channel,
    queue: string,
    settle: (delivery: Delivery) => Promise<void> = (delivery) => delivery.ack(),
  ): Promise<Delivery[]> {
    const taken: Delivery[] = [];
    for (;;) {
      const delivery = await channel.get(queue);
      if (!delivery) return taken;
      taken.push(delivery);
      await settle(delivery);
    }
  }

  /** Marks a transport as crashed on purpose: its later errors are expected, and cleanup only closes it. */
  markCrashed(transport: Transport): void {
    this.#crashed.add(transport);
  }

  /** Errors that channels or transports reported asynchronously (a broken consumer loop, a failed restore). */
  get asyncErrors(): readonly string[] {
    return this.#asyncErrors;
  }

  /**
   * Closes every channel and transport the test opened and deletes what it declared. Never throws: a cleanup
   * failure must not hide the test's own result; it is reported on the console.
   */
  async cleanup(): Promise<void> {
    const problems: string[] = [];
    for (const channel of this.#channels.splice(0).reverse()) {
      if (channel.isOpen) await channel.close().catch((error: unknown) => problems.push(`closing a channel: ${message(error)}`));
    }
    this.#admin = undefined;
    const live = this.#transports.filter((transport) => !this.#crashed.has(transport));
    let cleaner: Transport | undefined = live[0];
    if (!cleaner && (this.#queues.size > 0 || this.#exchanges.size > 0)) {
      cleaner = await Promise.resolve(this.setup.create()).catch(() => undefined);
      if (cleaner) this.#transports.push(cleaner);
    }
    if (cleaner) await this.#deleteEntities(cleaner, problems);
    for (const transport of this.#transports.splice(0).reverse()) {
      await transport.close().catch((error: unknown) => problems.push(`closing a transport: ${message(error)}`));
    }
    if (problems.length > 0) console.warn(`[kq conformance] cleanup of ${this.prefix}: ${problems.join('; ')}`);
  }

  async #deleteEntities(transport: Transport, problems: string[]): Promise<void> {
    let channel: Channel | undefined;
    const run = async (what: string, operation: (channel: Channel) => Promise<unknown>): Promise<void> => {
      try {
        if (!channel?.isOpen) channel = await transport.createChannel();
        await operation(channel);
      } catch (error) {
        problems.push(`${what}: ${message(error)}`);
      }
    };
    for (const queue of this.#queues) await run(`deleting queue ${queue}`, (c) => c.deleteQueue(queue));
    for (const exchange of this.#exchanges) await run(`deleting exchange ${exchange}`, (c) => c.deleteExchange(exchange));
    this.#queues.clear();
    this.#exchanges.clear();
    if (channel?.isOpen) await channel.close().catch(() => undefined);
  }

  #trackExchange(name: string): void {
    // The default exchange and amq.* exchanges belong to the broker.
    if (name !== '' && !name.startsWith('amq.')) this.#exchanges.add(name);
  }

  #noteAsyncError(transport: Transport, text: string): void {
    if (!this.#crashed.has(transport)) this.#asyncErrors.push(text);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
