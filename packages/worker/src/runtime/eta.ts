import type { EtaStrategy } from '../config/config';
import type { Logger } from '../log/logger';
import { formatIsoDate } from '../protocol/index';
import type { AppContract } from '../contract/app-contract';
import type { HeldTask } from './held-task';
import { republishable } from './redelivery';

/*
 * ETA and countdown tasks, in one place: the policy (on send, and when a worker receives one) and the timer that
 * holds them.
 *
 * - `worker` (the default, Celery's way): a sender publishes an ETA task straight to its queue, where any worker (a
 *   Python one too) takes it and holds it in memory until its time, raising its prefetch by one per task held.
 * - `broker` (kq-only fleets): the broker delays it, on send, and a worker that receives one not yet due gives it
 *   back with the broker's delay instead of holding it; if that republish fails it holds it after all.
 */

/** The fleet's strategy: `broker` only when configured so, else `worker`. */
export function etaStrategyOf(conf: { readonly etaStrategy: EtaStrategy | null }): EtaStrategy {
  return conf.etaStrategy ?? 'worker';
}

/** The broker delay (ms) to publish a task with on send: its ETA's distance under `broker`, else 0 (straight to its queue). */
export function sendDelayMs(eta: Date | null | undefined, strategy: EtaStrategy | null, nowMs: number = Date.now()): number {
  const delay = eta ? eta.getTime() - nowMs : 0;
  return delay > 0 && strategy === 'broker' ? delay : 0;
}

/** A received task's ETA if it is still to come, else null (run it now: no ETA, or one already past). */
export function pendingEta(eta: Date | null, nowMs: number = Date.now()): Date | null {
  return eta !== null && eta.getTime() > nowMs ? eta : null;
}

/** Whether a worker gives a received task whose ETA is to come back to the broker (rather than hold it). */
export function defersToBroker(strategy: EtaStrategy): boolean {
  return strategy === 'broker';
}

/**
 * Whether a worker routes the broker's shared delay ladder to its queues (Celery 5.5's DelayedDelivery step): when kq
 * delays through it (`broker`), or Celery's senders would (quorum queues, which cannot be held by prefetch).
 */
export function needsBrokerDelayRoutes(strategy: EtaStrategy, queues: ReadonlyArray<{ readonly queueType?: string | null }>): boolean {
  return strategy === 'broker' || queues.some((queue) => queue.queueType === 'quorum');
}

/** The delay to give a deferred task back with: at least 1 ms, so it takes the broker's delay path even if just due. */
export function deferDelayMs(eta: Date, nowMs: number = Date.now()): number {
  return Math.max(1, eta.getTime() - nowMs);
}

/**
 * Under `broker`, republishes a received ETA task with the broker's delayed delivery and acks the original, so no
 * worker holds it. False when the worker is to hold it: under `worker`, or when the republish failed.
 */
export async function deferToBroker(app: AppContract, log: Logger, request: HeldTask, eta: Date): Promise<boolean> {
  if (!defersToBroker(await app.etaStrategy())) return false;
  const { delivery } = request;
  try {
    const channel = await app.connection.channel();
    // Straight back to the queue it came from (default exchange, queue name): right whatever exchange it was first
    // published to — also for a message another client put in RabbitMQ's delay ladder, whose exchange kq cannot know.
    await channel.publish('', delivery.deliveryInfo.queue, republishable(delivery), {
      delay: deferDelayMs(eta),
    });
    await delivery.ack();
    log.info(`Task ${request.name}[${request.id}] deferred to the broker until ${formatIsoDate(eta)}`);
    return true;
  } catch (error) {
    log.warning(`Could not defer ${request.name}[${request.id}] to the broker (${String(error)}); holding it instead`);
    return false;
  }
}

/** One message held until its ETA (what `inspect scheduled` lists). */
export interface ScheduledEntry<T> {
  readonly eta: Date;
  readonly item: T;
}

/**
 * Holds items until their time (Celery's worker timer for ETA tasks). Timers are unref'd so a held task never keeps
 * a stopping process alive; cancelling returns the items so they can be given back to the broker.
 */
export class EtaTimer<T> {
  readonly #entries = new Map<T, { eta: Date; timer: NodeJS.Timeout }>();

  schedule(item: T, eta: Date, fire: (item: T) => void): void {
    // setTimeout caps at 2^31-1 ms (~24.8 days); longer waits re-arm.
    const arm = (): NodeJS.Timeout => {
      const wait = eta.getTime() - Date.now();
      const timer = setTimeout(
        () => {
          if (eta.getTime() - Date.now() > 0) {
            const entry = this.#entries.get(item);
            if (entry) entry.timer = arm();
            return;
          }
          this.#entries.delete(item);
          fire(item);
        },
        Math.min(Math.max(0, wait), 2_147_483_647),
      );
      timer.unref();
      return timer;
    };
    this.#entries.set(item, { eta, timer: arm() });
  }

  cancel(item: T): boolean {
    const entry = this.#entries.get(item);
    if (!entry) return false;
    clearTimeout(entry.timer);
    this.#entries.delete(item);
    return true;
  }

  /** Stops every timer and returns what was held. */
  clear(): T[] {
    const items = [...this.#entries.keys()];
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
    this.#entries.clear();
    return items;
  }

  /** The first held item that `predicate` accepts. */
  find(predicate: (item: T) => boolean): T | undefined {
    for (const item of this.#entries.keys()) if (predicate(item)) return item;
    return undefined;
  }

  get size(): number {
    return this.#entries.size;
  }

  entries(): Array<ScheduledEntry<T>> {
    return [...this.#entries].map(([item, { eta }]) => ({ eta, item }));
  }
}
