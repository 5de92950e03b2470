import type { OutgoingMessage } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { ResolvedRoute } from '../send/router';
import { EventDispatcher } from './event-dispatcher';

/** The fields of a `task-sent` event, in Celery's order (`as_task_v2`'s `sent_event` plus the route). */
export interface TaskSentFields {
  uuid: string;
  root_id: string | null;
  parent_id: string | null;
  name: string;
  /** `argsrepr`: Python's repr of the positional arguments. */
  args: string;
  /** `kwargsrepr`. */
  kwargs: string;
  retries: number;
  /** ISO 8601 or null. */
  eta: string | null;
  expires: string | null;
  queue: string | null;
  exchange: string;
  routing_key: string;
}

/** Reads the `task-sent` fields off a protocol-v2 task message as it is about to be published, and its route. */
export function taskSentFields(message: OutgoingMessage, route: Pick<ResolvedRoute, 'queue' | 'exchange' | 'routingKey'>): TaskSentFields {
  const h = message.headers;
  const text = (key: string): string | null => (typeof h[key] === 'string' ? (h[key] as string) : null);
  return {
    uuid: text('id') ?? '',
    root_id: text('root_id'),
    parent_id: text('parent_id'),
    name: text('task') ?? '',
    args: text('argsrepr') ?? '()',
    kwargs: text('kwargsrepr') ?? '{}',
    retries: typeof h['retries'] === 'number' ? h['retries'] : 0,
    eta: text('eta'),
    expires: text('expires'),
    queue: route.queue?.name ?? null,
    exchange: route.exchange.name,
    routing_key: route.routingKey,
  };
}

const clientDispatchers = new WeakMap<AppContract, EventDispatcher>();

/**
 * The dispatcher an app's client side sends `task-sent` with: hostname `gen<pid>@<host>` like Celery's
 * `anon_nodename()`, the app clock, the app's event exchange. One per app, made on first use.
 */
export function clientEventDispatcher(app: AppContract): EventDispatcher {
  let dispatcher = clientDispatchers.get(app);
  // A closed app gets a new connection on next use; follow it.
  if (!dispatcher || dispatcher.connection !== app.connection) {
    dispatcher = new EventDispatcher(app.connection, {
      clock: app.clock,
      exchange: app.conf.eventExchange,
      onError: (error) => app.log.warning(`task-sent event: ${error.message}`),
    });
    clientDispatchers.set(app, dispatcher);
  }
  return dispatcher;
}

/**
 * Sends `task-sent` for a published task (Celery does so when `task_send_sent_event` is set). Never throws and does
 * not wait for the broker: monitoring must not fail or slow down sending.
 */
export function sendTaskSentEvent(app: AppContract, fields: TaskSentFields): void {
  clientEventDispatcher(app).send('task-sent', { ...fields });
}
