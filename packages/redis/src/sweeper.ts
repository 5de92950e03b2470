import { priorityStep } from '@kq/core';
import type { RedisClient } from './connection-factory';
import { envelopePriority, markRedelivered } from '@kq/core';
import type { KeyLayout } from './key-layout';
import { RESTORE_INFLIGHT, VISIBILITY_RESTORE, VISIBILITY_SCAN } from './lua-scripts';
import { parseDocument, documentValue, member, writeDocument, type JsonNode } from '@kq/core';
import { quarantineRecord } from './quarantine';
import { randomUUID } from 'node:crypto';

/** The shortest gap between two frequent sweeps that follow the leases. */
const MIN_SWEEP_GAP_MS = 100;
/** Share of a gap added at random, so processes that saw the same lease do not sweep together. */
const JITTER_SHARE = 0.1;
/** After a sweep that saw nothing (it failed, or stood aside for Kombu's mutex), the next comes this soon at most. */
const RETRY_UNSEEN_MS = 5000;
/**
 * A native claim's in-flight list counts as abandoned once its registry entry is this old (or the lease, if longer):
 * far beyond any live claim's two round trips, and beyond clock skew between hosts (the entry has the claimer's clock).
 */
export const MIN_INFLIGHT_GRACE_MS = 60_000;
/** Appended to a scope's `unacked` key: the fleet's sweep gate for those records (kq's own; Kombu never reads it). */
const GATE_SUFFIX = '._kq.sweep_gate';

export interface SweeperOptions {
  commands: RedisClient;
  layout: KeyLayout;
  /**
   * The scopes whose records to sweep: `['']` in Kombu's layout (one set of records for every queue); the known
   * queues in the cluster layout, where each queue keeps its own in its slot.
   */
  scopes: () => Promise<readonly string[]>;
  /**
   * The frequent sweep's period; with `leaseSweepFollowsExpiry`, the longest it waits: each sweep then sets the next
   * for when the first lease it saw runs out.
   */
  leaseSweepIntervalMs: number;
  leaseSweepFollowsExpiry?: boolean;
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
  #running = false;
  /** The frequent sweep's timer: an interval, or with `leaseSweepFollowsExpiry` the next sweep's timeout. */
  #leaseTimer: NodeJS.Timeout | undefined;
  #visibilityTimer: NodeJS.Timeout | undefined;
  #leaseRun: Promise<number> | undefined;
  /**
   * What the last sweep that heard from every scope saw: ms until the first lease not yet run out runs out (undefined:
   * nothing held), and whether it left stale deliveries for a next call (its restore limit). Undefined once used.
   */
  #seen: { nextExpiryMs: number | undefined; moreStale: boolean; gateTaken?: boolean } | undefined;
  /** This process's name on the sweep gate, and per scope when the gate it holds runs out (ms since the epoch). */
  readonly #gateToken = randomUUID();
  readonly #gateHeldUntil = new Map<string, number>();

  constructor(options: SweeperOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Starts both sweeps; the visibility sweep runs once at once (as a Kombu worker does at start). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const { leaseSweepIntervalMs, visibilitySweepIntervalMs, onError } = this.#options;
    this.#visibilityTimer = setInterval(() => void this.#sweep(true, this.#gated).catch(onError), visibilitySweepIntervalMs);
    this.#visibilityTimer.unref();
    const first = this.sweepVisibility().catch(onError);
    if (this.#options.leaseSweepFollowsExpiry) {
      // The start-up sweep says when the first lease runs out; the frequent sweeps go on from there.
      void first.then(() => this.#armLeaseSweep());
      return;
    }
    this.#leaseTimer = setInterval(() => void this.sweepLeases().catch(onError), leaseSweepIntervalMs);
    this.#leaseTimer.unref();
  }

  /**
   * The next frequent sweep when it follows the leases: when the first lease the last sweep saw runs out (at once when
   * that sweep hit its restore limit), at most `leaseSweepIntervalMs` away, and up to a tenth later so the fleet's
   * processes, which all see the same leases, do not sweep together. With nothing held, no lease taken after a
   * sweep runs out before the next (each is `leaseMs` long, the default cap), so an idle process sweeps once a lease
   * rather than every few seconds: in an idle fleet every process's sweeps were a fifth of its Redis commands.
   */
  #armLeaseSweep(): void {
    if (!this.#running) return;
    const { leaseSweepIntervalMs, onError } = this.#options;
    const seen = this.#seen;
    this.#seen = undefined;
    // Nothing seen: the last sweep failed (Redis away) or stood aside for Kombu's mutex.
    const until =
      seen === undefined
        ? Math.min(leaseSweepIntervalMs, RETRY_UNSEEN_MS)
        : seen.moreStale
          ? 0
          : Math.min(seen.nextExpiryMs ?? Infinity, leaseSweepIntervalMs);
    const gap = Math.max(MIN_SWEEP_GAP_MS, until);
    clearTimeout(this.#leaseTimer);
    // A sweep that found the gate taken waits a whole interval, no more: by then the holder's gate has run out.
    const jitter = seen?.gateTaken ? 0 : gap * JITTER_SHARE * Math.random();
    this.#leaseTimer = setTimeout(() => {
      void this.#sweep(false, this.#gated)
        .catch(onError)
        .finally(() => this.#armLeaseSweep());
    }, gap + jitter);
    this.#leaseTimer.unref();
  }

  stop(): void {
    this.#running = false;
    clearInterval(this.#leaseTimer);
    clearInterval(this.#visibilityTimer);
    this.#leaseTimer = undefined;
    this.#visibilityTimer = undefined;
  }

  /** Restores every delivery whose lease ran out, without Kombu's mutex; resolves to how many. */
  sweepLeases(): Promise<number> {
    this.#leaseRun ??= this.#sweep(false, false).finally(() => {
      this.#leaseRun = undefined;
    });
    return this.#leaseRun;
  }

  /** Kombu's `restore_visible`; resolves to how many deliveries it restored (0 when another process holds the mutex). */
  sweepVisibility(): Promise<number> {
    return this.#sweep(true, false);
  }

  /**
   * The timed sweeps pass a gate when they follow the leases: one process per interval sweeps, for the fleet (each
   * sweep scans every lease, so one suffices). With a fixed `leaseSweepIntervalMs` (the fault suite's setting) every
   * process sweeps, as before.
   */
  get #gated(): boolean {
    return this.#options.leaseSweepFollowsExpiry === true;
  }

  /**
   * Whether this process may sweep `scope` now: it holds the gate (set by it less than an interval ago), or takes it
   * with a native `SET key token NX PX interval` (far cheaper for Redis than the scan script). A process whose gate
   * ran out, or that died, leaves it to whoever asks next.
   */
  async #passGate(scope: string): Promise<boolean> {
    const { commands, layout, leaseSweepIntervalMs } = this.#options;
    const now = Date.now();
    if ((this.#gateHeldUntil.get(scope) ?? 0) > now) return true;
    const taken = await commands.set(layout.scopedKey('unacked', scope) + GATE_SUFFIX, this.#gateToken, 'PX', leaseSweepIntervalMs, 'NX');
    if (taken !== 'OK') return false;
    // A little short of the key's life, so this process never sweeps on a gate another one has taken since.
    this.#gateHeldUntil.set(scope, now + leaseSweepIntervalMs * 0.9);
    return true;
  }

  async #sweep(withMutex: boolean, gated: boolean): Promise<number> {
    let total = 0;
    // Abandoned in-flight lists (native claims: never in the cluster layout) go back with the first scope's lease sweep.
    let inflightSwept = withMutex || this.#options.layout.cluster;
    let nextExpiryMs: number | undefined;
    let moreStale = false;
    let heard = true;
    let gateTaken = false;
    for (const scope of await this.#options.scopes()) {
      if (gated && !(await this.#passGate(scope))) {
        gateTaken = true; // another process sweeps these records this interval
        continue;
      }
      if (!inflightSwept) {
        inflightSwept = true;
        total += await this.sweepInflight();
      }
      const swept = await this.#sweepOf(scope, withMutex);
      total += swept.restored;
      if (!swept.seen) heard = false;
      else if (swept.seen.moreStale) moreStale = true;
      const next = swept.seen?.nextExpiryMs;
      if (next !== undefined) nextExpiryMs = Math.min(nextExpiryMs ?? Infinity, next);
    }
    if (heard) this.#seen = { nextExpiryMs, moreStale, gateTaken: gateTaken && nextExpiryMs === undefined && !moreStale };
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

  /** One scope's sweep: how many it restored and what it saw (none when it stood aside for Kombu's mutex). */
  async #sweepOf(
    scope: string,
    withMutex: boolean,
  ): Promise<{ restored: number; seen: { nextExpiryMs: number | undefined; moreStale: boolean } | undefined }> {
    const { commands, layout, visibilityTimeout, restoreLimit } = this.#options;
    const mutex = withMutex ? 1 : 0;
    const scanKeys = [layout.scopedKey('unacked', scope), layout.scopedKey('unackedIndex', scope), layout.scopedKey('unackedMutex', scope)];
    const reply = (await VISIBILITY_SCAN.run(commands, scanKeys, [mutex, Math.round(visibilityTimeout * 1_000_000), restoreLimit])) as Array<
      string | number | null
    > | null;
    if (reply === null) return { restored: 0, seen: undefined };
    const [nextMs, ...found] = reply;
    const seen = { nextExpiryMs: typeof nextMs === 'number' && nextMs >= 0 ? nextMs : undefined, moreStale: found.length / 3 >= restoreLimit };
    const args: Array<string | number> = [layout.prefix, mutex];
    for (let at = 0; at < found.length; at += 3) {
      const tag = found[at] as string;
      const score = found[at + 1] as string;
      const value = (found[at + 2] ?? null) as string | null;
      args.push(tag, score, ...(await this.#visibilityTargets(tag, value, scope)));
    }
    if (found.length === 0) return { restored: 0, seen };
    return { restored: Number(await VISIBILITY_RESTORE.run(commands, scanKeys, args)), seen };
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

