import { priorityStep } from '@kq/core';
import type { RedisClient } from './connection-factory';
import { envelopePriority, markRedelivered } from '@kq/core';
import type { KeyLayout } from './key-layout';
import { RESTORE_INFLIGHT, VISIBILITY_RESTORE, VISIBILITY_SCAN } from './lua-scripts';
import { parseDocument, documentValue, member, writeDocument, type JsonNode } from '@kq/core';
import { quarantineRecord } from './quarantine';

/**
 * A native claim's in-flight list counts as abandoned once its registry entry is this old (or the lease, if longer):
 * far beyond any live claim's two round trips, and beyond clock skew between hosts (the entry has the claimer's clock).
 */
export const MIN_INFLIGHT_GRACE_MS = 60_000;

export interface SweeperOptions {
  commands: RedisClient;
  layout: KeyLayout;
  /**
   * The scopes whose records to sweep: `['']` in Kombu's layout (one set of records for every queue); the known
   * queues in the cluster layout, where each queue keeps its own in its slot.
   */
  scopes: () => Promise<readonly string[]>;
  leaseSweepIntervalMs: number;
  visibilitySweepIntervalMs: number;
  /** Kombu `visibility_timeout`, seconds. */
  visibilityTimeout: number;
  restoreLimit: number;
  /**
   * How old a native claim's in-flight registry entry must be before its list counts as abandoned (its process died
   * between taking and recording): the claim's lease at least, so a live claim is never taken back.
   */
  inflightGraceMs: number;
  /** Queues a delivery published to (exchange, routing key) goes back to (Kombu's `_lookup`). */
  route: (exchange: string, routingKey: string, headers: Record<string, unknown>) => Promise<string[]>;
  warn: (message: string) => void;
  onError: (error: unknown) => void;
}

export interface SweepCounts {
  /** Deliveries the frequent sweeps (`sweepLeases`, every `leaseSweepIntervalMs`) restored. */
  leaseRestored: number;
  /** Deliveries the start-up and slow sweeps (`sweepVisibility`, under Kombu's mutex) restored. */
  visibilityRestored: number;
}

/**
 * Brings back deliveries whose consumer is gone, by Kombu's one rule: an `unacked_index` score older than
 * now - `visibility_timeout`. A kq claim's score is its lease deadline minus the visibility timeout (see
 * lua/prelude.lua), so this is "the lease ran out" for deliveries kq holds and Kombu's `restore_visible` for those a
 * Python worker took. Each goes back as Kombu restores it: routed again by its exchange and routing key, to the head
 * of the queue (RPUSH) with `redelivered` set, with a compare-and-set on its score so a delivery acked or renewed
 * meanwhile is left alone. The frequent sweep relies on that alone; the slow one also stands aside while another
 * process holds Kombu's `unacked_mutex` (it never takes it: each restore is one atomic step, so there is nothing to
 * guard, and a kq process killed between two calls cannot leave it held). Runs in every consuming kq process; any one of them suffices.
 */
export class Sweeper {
  readonly #options: SweeperOptions;
  readonly counts: SweepCounts = { leaseRestored: 0, visibilityRestored: 0 };
  #leaseTimer: NodeJS.Timeout | undefined;
  #visibilityTimer: NodeJS.Timeout | undefined;
  #leaseRun: Promise<number> | undefined;

  constructor(options: SweeperOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#leaseTimer !== undefined;
  }

  /** Starts both sweeps; the visibility sweep runs once at once (as a Kombu worker does at start). */
  start(): void {
    if (this.#leaseTimer) return;
    const { leaseSweepIntervalMs, visibilitySweepIntervalMs, onError } = this.#options;
    this.#leaseTimer = setInterval(() => void this.sweepLeases().catch(onError), leaseSweepIntervalMs);
    this.#leaseTimer.unref();
    this.#visibilityTimer = setInterval(() => void this.sweepVisibility().catch(onError), visibilitySweepIntervalMs);
    this.#visibilityTimer.unref();
    void this.sweepVisibility().catch(onError);
  }

  stop(): void {
    if (this.#leaseTimer) clearInterval(this.#leaseTimer);
    if (this.#visibilityTimer) clearInterval(this.#visibilityTimer);
    this.#leaseTimer = undefined;
    this.#visibilityTimer = undefined;
  }

  /** Restores every delivery whose lease ran out, without Kombu's mutex; resolves to how many. */
  sweepLeases(): Promise<number> {
    this.#leaseRun ??= this.#sweep(false).finally(() => {
      this.#leaseRun = undefined;
    });
    return this.#leaseRun;
  }

  /** Kombu's `restore_visible`; resolves to how many deliveries it restored (0 when another process holds the mutex). */
  sweepVisibility(): Promise<number> {
    return this.#sweep(true);
  }

  async #sweep(withMutex: boolean): Promise<number> {
    let total = 0;
    if (!withMutex && !this.#options.layout.cluster) total += await this.sweepInflight();
    for (const scope of await this.#options.scopes()) total += await this.#sweepOf(scope, withMutex);
    if (withMutex) this.counts.visibilityRestored += total;
    else this.counts.leaseRestored += total;
    return total;
  }

  /**
   * Puts back the messages of native claims whose process died between moving them to its in-flight list and
   * recording them (see native-claim.ts): every registry entry older than the grace. Resolves to how many.
   */
  async sweepInflight(): Promise<number> {
    const { commands, layout, inflightGraceMs, restoreLimit } = this.#options;
    const registry = layout.key('inflight');
    const stale = await commands.zrangebyscore(registry, '-inf', Date.now() - inflightGraceMs, 'LIMIT', 0, restoreLimit);
    let total = 0;
    for (const member of stale) {
      let lists: unknown;
      try {
        lists = JSON.parse(member);
      } catch {
        lists = undefined;
      }
      if (!Array.isArray(lists) || typeof lists[0] !== 'string' || typeof lists[1] !== 'string') {
        await commands.zrem(registry, member);
        continue;
      }
      total += Number(await RESTORE_INFLIGHT.run(commands, [registry, lists[0], lists[1]], [member]));
    }
    if (total > 0) {
      // counted with the lease sweep's restores (sweepLeases adds them)
      this.#options.warn(`kq/redis: put back ${total} message(s) a kq process took and died before recording (abandoned in-flight lists)`);
    }
    return total;
  }

  async #sweepOf(scope: string, withMutex: boolean): Promise<number> {
    const { commands, layout, visibilityTimeout, restoreLimit } = this.#options;
    const mutex = withMutex ? 1 : 0;
    const scanKeys = [layout.scopedKey('unacked', scope), layout.scopedKey('unackedIndex', scope), layout.scopedKey('unackedMutex', scope)];
    const found = (await VISIBILITY_SCAN.run(commands, scanKeys, [mutex, Math.round(visibilityTimeout * 1_000_000), restoreLimit])) as Array<
      string | null
    > | null;
    if (found === null) return 0;
    const args: Array<string | number> = [layout.prefix, mutex];
    for (let at = 0; at < found.length; at += 3) {
      const tag = found[at] as string;
      const score = found[at + 1] as string;
      const value = found[at + 2] ?? null;
      args.push(tag, score, ...(await this.#visibilityTargets(tag, value, scope)));
    }
    if (found.length === 0) return 0;
    return Number(await VISIBILITY_RESTORE.run(commands, scanKeys, args));
  }

  /**
   * (envelope, n, (op, key)…) for one stale delivery: its queues by Kombu's routing, else the quarantine list. In the
   * cluster layout a script reaches one queue's slot only, and the records are the queue's own: it goes back there.
   */
  async #visibilityTargets(tag: string, value: string | null, scope: string): Promise<Array<string | number>> {
    const { layout } = this.#options;
    if (value === null) return ['', 0]; // index entry without a message: Kombu just drops the index entry
    let document: JsonNode | undefined;
    try {
      document = parseDocument(value);
    } catch {
      document = undefined;
    }
    const envelopeNode = document?.kind === 'array' ? document.items[0] : undefined;
    const exchangeNode = document?.kind === 'array' ? document.items[1] : undefined;
    const routingNode = document?.kind === 'array' ? document.items[2] : undefined;
    if (!envelopeNode || envelopeNode.kind !== 'object' || exchangeNode?.kind !== 'string' || routingNode?.kind !== 'string') {
      return this.#toQuarantine(tag, value, 'the unacked entry is not [envelope, exchange, routing_key]', scope);
    }
    const envelope = writeDocument(envelopeNode);
    const headersNode = member(envelopeNode, 'headers');
    const headers = headersNode?.kind === 'object' ? (documentValue(headersNode) as Record<string, unknown>) : {};
    const queues = layout.cluster ? [scope] : await this.#options.route(exchangeNode.value, routingNode.value, headers);
    if (queues.length === 0) {
      return this.#toQuarantine(
        tag,
        envelope,
        `no queue is bound to exchange ${JSON.stringify(exchangeNode.value)} with routing key ${JSON.stringify(routingNode.value)} any more`,
        scope,
      );
    }
    const step = priorityStep(envelopePriority(envelope), layout.steps);
    const targets = queues.flatMap((queue) => ['RPUSH', layout.listName(queue, step)]);
    return [markRedelivered(envelope), queues.length, ...targets];
  }

  #toQuarantine(tag: string, raw: string, reason: string, scope: string): Array<string | number> {
    const { layout } = this.#options;
    this.#options.warn(`kq/redis: delivery ${tag} could not be restored and was moved to ${layout.scopedKey('quarantine', scope)}: ${reason}`);
    return [quarantineRecord({ queue: '', key: '', reason, raw }), 1, 'LPUSH', layout.scopedName('quarantine', scope)];
  }
}

