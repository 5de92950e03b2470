import { Exchange, Queue, globToRegExp } from '@kq/core';
import type { AppConfig, Route } from '../config/config';

/** Where one task message is published, and the queue to declare first (Celery's maybe_declare). */
export interface ResolvedRoute {
  readonly queue: Queue | null;
  readonly exchange: Exchange;
  readonly routingKey: string;
  readonly priority: number | undefined;
}

/** Most task names whose route is remembered; beyond it the memo starts over (names sent are usually few). */
const MAX_REMEMBERED_ROUTES = 1000;

/**
 * Celery's router: the task's own queue option, else `taskRoutes` (globs in insertion order, or a function), else the
 * default queue. Direct queues are published through the default exchange `''` with the queue name as routing key,
 * exactly as Celery does (docs/wire.md#routing-a-task), so Python workers consume what kq sends.
 */
export class Router {
  readonly #config: AppConfig;
  readonly #patterns: Array<{ test: RegExp; route: Route }> = [];
  readonly #queues = new Map<string, Queue>();
  /** Routes by task name for sends without routing options, when `taskRoutes` is not a function of the arguments. */
  readonly #byName = new Map<string, ResolvedRoute>();

  constructor(config: AppConfig) {
    this.#config = config;
    const routes = config.taskRoutes;
    if (routes && typeof routes === 'object') {
      for (const [pattern, route] of Object.entries(routes)) {
        this.#patterns.push({ test: globToRegExp(pattern), route: typeof route === 'string' ? { queue: route } : route });
      }
    }
    for (const queue of config.taskQueues) this.#queues.set(queue.name, queue);
  }

  route(name: string, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, explicit: Route = {}): ResolvedRoute {
    const plain =
      explicit.queue === undefined &&
      explicit.exchange === undefined &&
      explicit.exchangeType === undefined &&
      explicit.routingKey === undefined &&
      explicit.priority === undefined;
    if (!plain || typeof this.#config.taskRoutes === 'function') return this.#resolve(name, args, kwargs, explicit);
    // Glob routes and the default depend on the name alone: resolve each name once (no objects per send).
    let route = this.#byName.get(name);
    if (route === undefined) {
      if (this.#byName.size >= MAX_REMEMBERED_ROUTES) this.#byName.clear();
      route = this.#resolve(name, args, kwargs, explicit);
      this.#byName.set(name, route);
    }
    return route;
  }

  #resolve(name: string, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, explicit: Route): ResolvedRoute {
    const found = explicit.queue || explicit.exchange ? explicit : { ...this.#lookup(name, args, kwargs), ...stripUndefined(explicit) };
    const priority = explicit.priority ?? found.priority ?? this.#config.taskDefaultPriority ?? undefined;
    if (found.exchange && !found.queue) {
      const exchange = new Exchange(found.exchange, { type: found.exchangeType ?? 'direct' });
      return { queue: null, exchange, routingKey: found.routingKey ?? '', priority };
    }
    const queue = this.queue(found.queue ?? this.#config.taskDefaultQueue);
    const binding = queue.bindings[0];
    if (!binding || binding.exchange.type === 'direct') {
      return { queue, exchange: Exchange.DEFAULT, routingKey: queue.name, priority };
    }
    return { queue, exchange: binding.exchange, routingKey: found.routingKey ?? binding.routingKey, priority };
  }

  /** The queue named `name`: a configured one, or Celery's auto-created `Queue(name, Exchange(name), name)`. */
  queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      const exchangeName = name === this.#config.taskDefaultQueue ? (this.#config.taskDefaultExchange ?? name) : name;
      const routingKey = name === this.#config.taskDefaultQueue ? (this.#config.taskDefaultRoutingKey ?? name) : name;
      queue = new Queue(name, {
        exchange: new Exchange(exchangeName, { type: this.#config.taskDefaultExchangeType }),
        routingKey,
        ...(this.#config.taskQueueMaxPriority === null ? {} : { maxPriority: this.#config.taskQueueMaxPriority }),
        // Classic is declared with no argument, as Celery does, so both declare the same queue.
        ...(this.#config.taskDefaultQueueType === 'quorum' ? { queueType: 'quorum' as const } : {}),
        ...(this.#config.taskDefaultDeliveryLimit === null ? {} : { deliveryLimit: this.#config.taskDefaultDeliveryLimit }),
      });
      this.#queues.set(name, queue);
    }
    return queue;
  }

  #lookup(name: string, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>): Route {
    const routes = this.#config.taskRoutes;
    if (typeof routes === 'function') {
      const route = routes(name, args, kwargs);
      if (route !== undefined) return typeof route === 'string' ? { queue: route } : route;
      return {};
    }
    for (const { test, route } of this.#patterns) if (test.test(name)) return route;
    return {};
  }
}

function stripUndefined(route: Route): Route {
  return Object.fromEntries(Object.entries(route).filter(([, value]) => value !== undefined)) as Route;
}
