import { Exchange, NO_REPLY, Queue, pythonExceptionRepr, pythonRepr, pythonSetRepr, type MailboxHandler } from '@kq/core';
import { SOFTWARE_INFO } from '../protocol/software-info';
import { formatIsoDate } from '../protocol/index';
import { parseRateLimit } from '../runtime/rate-limit';
import type { WorkerStep } from '../runtime/bootstep';
import type { HeldTask } from '../runtime/held-task';
import { controlCommands } from '../runtime/control-commands';
import { stampValuesMatching, stampedHeadersArgument } from '../runtime/revoked-stamps';
import type { WorkerHost } from '../runtime/worker-host';
import { fleetCeleryRelease, redeliveredAsFleet, revokedReplyText } from './fleet-version';
import { MemorySamples } from './memory-samples';
import { HELLO_PEERS, HELLO_WATCHERS, HELLO_WATCHERS_ONLY } from './mingle';
import { startingHints, type MingleHints } from './mingle-hints';
import { DEFAULT_GOSSIP_WATCHERS } from './gossip-options';
import type { ClusterContext } from './cluster-context';
import { queueAsDict } from './queue-as-dict';
import { queueControlOf } from './queue-control';
import { registeredTasks } from './registered-tasks';
import { signalName, signalNumber } from './signal-number';
import { bugReport, confTable } from './worker-conf';
import { workerStats } from './worker-stats';

type Handler = (args: Record<string, unknown>) => unknown;

const ok = (value: unknown): { ok: unknown } => ({ ok: value });
const nok = (value: unknown): { error: unknown } => ({ error: value });
/** Celery's `int()` of a count argument, else the default. */
const count = (value: unknown, fallback: number): number => {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : fallback;
};

/**
 * Every remote-control command a Celery worker answers (docs/wire.md#remote-control-pidbox), with Celery's argument and
 * reply shapes, for a kq worker: `celery inspect` / `celery control`, Flower and `kq inspect` / `kq control` all work
 * against it. Arguments come from other processes: task ids may be one string or a list, missing keys take Celery's
 * defaults, and a handler that fails replies `{error: "<Python-style repr>"}` rather than breaking the worker.
 *
 * `pool_grow`, `pool_shrink` and `autoscale` belong to the pool and are not defined here.
 */
export function remoteControlCommands(worker: WorkerHost, context: ClusterContext): Record<string, MailboxHandler> {
  const { app, state } = worker;

  const revoke: Handler = (args) => {
    const ids = uniqueIds(args['task_id']);
    for (const id of ids) state.revoked.add(id);
    if (args['terminate']) {
      const signum = signalNumber(args['signal'] ?? 'SIGTERM');
      const terminated: string[] = [];
      for (const id of ids) {
        const request = findRequest(worker, id);
        if (!request) continue;
        terminated.push(id);
        worker.log.info(`Terminating ${id} (${signalName(signum)})`);
        // A running task's signal is aborted; one not started yet is skipped as revoked when its turn comes.
        if (state.active.get(id) === request) request.terminate(`revoked with terminate (${signalName(signum)})`);
      }
      return ok(terminated.length === 0 ? 'terminate: tasks unknown' : `terminate: ${terminated.join(', ')}`);
    }
    worker.log.info(`Tasks flagged as revoked: ${ids.join(', ')}`);
    // The reply's shape changed in Celery 5.6: answer as the fleet's Python workers would.
    return ok(revokedReplyText(ids, fleetCeleryRelease(context.gossip?.state.workers.values() ?? [])));
  };

  // Celery 5.3+: revoke the tasks stamped with these values, now and when they arrive.
  const revokeByStampedHeaders: Handler = (args) => {
    const headers = stampedHeadersArgument(args['headers']);
    state.revokedStamps.add(headers);
    if (!args['terminate']) return ok(`headers ${pythonRepr(headers)} flagged as revoked, but not terminated`);
    const signum = signalNumber(args['signal'] ?? 'SIGTERM');
    const terminated = new Map<string, unknown[]>();
    for (const request of [...state.active.values()]) {
      const hits = Object.entries(headers).flatMap(([header, values]) => stampValuesMatching(values, request.message.stamps, header).map((value) => [header, value] as const));
      for (const [header, value] of hits) terminated.set(header, [...(terminated.get(header) ?? []), value]);
      if (hits.length > 0) request.terminate(`revoked by stamped header (${signalName(signum)})`);
    }
    if (terminated.size === 0) return ok(`headers ${pythonRepr(headers)} were not terminated`);
    // Python's reply shows its defaultdict(set) of what matched.
    const matched = [...terminated].map(([header, values]) => `${pythonRepr(header)}: ${pythonSetRepr(values)}`).join(', ');
    return ok(`headers defaultdict(<class 'set'>, {${matched}}) revoked`);
  };

  // Celery 5.5+ shows a virtual transport's unmarked first delivery as redelivered False, earlier ones as None.
  const requestInfo = (request: HeldTask, safe = false): ReturnType<HeldTask['info']> => {
    const info = request.info(safe);
    const redelivered = redeliveredAsFleet(info.delivery_info.redelivered, fleetCeleryRelease(context.gossip?.state.workers.values() ?? []));
    return redelivered === info.delivery_info.redelivered ? info : { ...info, delivery_info: { ...info.delivery_info, redelivered } };
  };
  const active: Handler = (args) => [...state.active.values()].map((request) => requestInfo(request, args['safe'] === true));
  const reserved: Handler = () => reservedRequests(worker).map((request) => requestInfo(request));
  const scheduled: Handler = () =>
    worker.scheduled().map(({ eta, request }) => ({
      // Python shows the eta it read, to the microsecond.
      eta: formatIsoDate(eta, eta.getTime() === request.message.eta?.getTime() ? request.message.etaMicroseconds : 0),
      priority: 6,
      request: requestInfo(request),
    }));
  const revoked: Handler = () => [...state.revoked];
  const registered: Handler = (args) =>
    registeredTasks(app.tasks, { taskinfoitems: args['taskinfoitems'], builtins: args['builtins'], overrides: context.overrides });
  const conf: Handler = (args) => confTable(app.conf, args['with_defaults'] === true || args['with_defaults'] === 'true');

  const memory = new MemorySamples();

  const commands: Record<string, Handler> = {
    ping: () => ok('pong'),

    memsample: () => memory.sample(),
    memdump: (args) => memory.dump(count(args['samples'], 10)),
    // Python needs the objgraph library for this and answers with its ImportError without it; Node has no objgraph.
    objgraph: () => nok(pythonExceptionRepr('ImportError', 'Requires the objgraph library')),
    pool_restart: () => {
      if (!app.conf.workerPoolRestarts) return nok(pythonExceptionRepr('ValueError', 'Pool restarts not enabled'));
      // Child pools replace each child once its current task ends; the async pool has no children (Celery's pools
      // without restart do nothing either).
      worker.pool.restart?.();
      worker.log.info('pool restart requested by remote control');
      return ok('reload started');
    },

    hello: (args) => {
      const from = args['from_node'];
      if (from === worker.hostname) return null;
      worker.log.info(`sync with ${String(from)}`);
      const theirs = args['revoked'];
      if (theirs && typeof theirs === 'object' && !Array.isArray(theirs)) {
        try {
          state.revoked.update(theirs as Record<string, unknown>);
        } catch (error) {
          // Python raises ValueError for a bad timestamp: answer the same error, with Python's message.
          const message = (error instanceof Error ? error.message : String(error)).replace(/ \(LimitedSet wire entry[\s\S]*$/, '');
          return nok(pythonExceptionRepr('ValueError', message));
        }
      }
      // A kq worker asking only the watchers (bounded Mingle): one that is not a watcher, and knows it, stays silent.
      // Without Gossip, or while still deciding whether to watch, it answers: better one reply too many than none
      // (a deciding one, or one whose Gossip is still starting, names the watchers it knows, so the asker need not
      // wait out its timeout).
      const watchersOnly = args[HELLO_WATCHERS_ONLY] === true;
      const hints = watchersOnly ? helloHints(worker, context) : undefined;
      if (watchersOnly && context.gossip && !context.gossip.deciding && !hints) return NO_REPLY;
      state.revoked.purge(); // do not hand expired ids to the other worker
      const reply: Record<string, unknown> = { revoked: state.revoked.toWire(), clock: app.clock.forward() };
      if (hints) Object.assign(reply, { [HELLO_WATCHERS]: hints.watchers, [HELLO_PEERS]: hints.peers });
      return reply;
    },

    stats: async () => workerStats(worker, await app.connection.transport()),
    active,
    dump_active: active,
    reserved,
    dump_reserved: reserved,
    scheduled,
    dump_schedule: scheduled,
    revoked,
    dump_revoked: revoked,
    registered,
    dump_tasks: registered,
    conf,
    dump_conf: conf,

    query_task: (args) => {
      const result: Record<string, unknown> = {};
      for (const id of uniqueIds(args['ids'] ?? args['task_id'])) {
        const request = findRequest(worker, id);
        if (!request) continue;
        result[id] = [state.active.get(id) === request ? 'active' : 'reserved', requestInfo(request)];
      }
      return result;
    },

    revoke,
    revoke_by_stamped_headers: revokeByStampedHeaders,
    terminate: (args) => revoke({ ...args, terminate: true }),

    rate_limit: (args) => {
      const name = String(args['task_name'] ?? '');
      const rate = args['rate_limit'] as string | number | null | undefined;
      try {
        parseRateLimit(rate ?? null);
      } catch (error) {
        return nok(`Invalid rate limit string: ${pythonExceptionRepr('ValueError', error instanceof Error ? error.message : String(error))}`);
      }
      if (!app.tasks.has(name)) {
        worker.log.error(`Rate limit attempt for unknown task ${name}`);
        return nok('unknown task');
      }
      worker.setRateLimit(name, rate ?? null);
      context.overridesOf(name).rateLimit = rate || null;
      if (!rate) {
        worker.log.info(`Rate limits disabled for tasks of type ${name}`);
        return ok('rate limit disabled successfully');
      }
      worker.log.info(`New rate limit for tasks of type ${name}: ${String(rate)}.`);
      return ok('new rate limit set successfully');
    },

    time_limit: (args) => {
      const name = String(args['task_name'] ?? '');
      if (!app.tasks.has(name)) {
        worker.log.error(`Change time limit attempt for unknown task ${name}`);
        return nok('unknown task');
      }
      const soft = optionalSeconds(args['soft']);
      const hard = optionalSeconds(args['hard']);
      worker.setTimeLimits(name, soft, hard);
      Object.assign(context.overridesOf(name), { softTimeLimit: soft, timeLimit: hard });
      worker.log.info(`New time limits for tasks of type ${name}: soft=${soft ?? 'None'} hard=${hard ?? 'None'}`);
      return ok('time limits set successfully');
    },

    clock: () => ({ clock: app.clock.value }),

    heartbeat: () => {
      worker.log.debug('Heartbeat requested by remote.');
      context.dispatcher?.send('worker-heartbeat', { freq: 5, ...SOFTWARE_INFO });
      return null;
    },

    enable_events: () => {
      const dispatcher = context.dispatcher;
      if (!dispatcher) return nok('event dispatcher unavailable');
      // Celery's logic, quirks included: an empty group set already means "everything".
      if (dispatcher.groups.size > 0 && !dispatcher.groups.has('task')) {
        dispatcher.groups.add('task');
        worker.log.info('Events of group {task} enabled by remote.');
        return ok('task events enabled');
      }
      return ok('task events already enabled');
    },

    disable_events: () => {
      const dispatcher = context.dispatcher;
      if (!dispatcher) return nok('event dispatcher unavailable');
      if (dispatcher.groups.has('task')) {
        dispatcher.groups.delete('task');
        worker.log.info('Events of group {task} disabled by remote.');
        return ok('task events disabled');
      }
      return ok('task events already disabled');
    },

    add_consumer: async (args) => {
      const name = args['queue'];
      if (typeof name !== 'string' || name === '') return nok('add_consumer needs a queue name');
      const control = queueControlOf(worker);
      if (!control) return nok('this worker cannot change its queues while running');
      const queue = taskQueue(worker, name, args);
      if (await control.addQueue(queue)) worker.log.info(`Started consuming from ${name}`);
      return ok(`add consumer ${name}`);
    },

    cancel_consumer: async (args) => {
      const name = String(args['queue'] ?? '');
      const control = queueControlOf(worker);
      if (!control) return nok('this worker cannot change its queues while running');
      worker.log.info(`Canceling queue ${name}`);
      await control.cancelQueue(name);
      return ok(`no longer consuming from ${name}`);
    },

    active_queues: () => worker.queues.map(queueAsDict),

    election: (args) => {
      const { id, topic, action } = args;
      if (typeof id === 'string' && typeof topic === 'string') context.gossip?.election(id, topic, action ?? null);
      return null;
    },

    shutdown: (args) => {
      worker.log.warning(typeof args['msg'] === 'string' ? args['msg'] : 'Got shutdown from remote');
      void worker.stop();
      return NO_REPLY;
    },

    report: async () => ok(bugReport(app.conf, (await app.connection.transport()).name)),
  };

  // Celery's Pidbox forwards the app clock on every control message before handling it (docs/wire.md#lamport-clocks).
  // The worker's own commands this set does not replace (the pool's) are wrapped too, so every command counts.
  const wrapped: Record<string, MailboxHandler> = {};
  const all: Record<string, MailboxHandler> = { ...controlCommands(worker), ...commands };
  for (const [name, handler] of Object.entries(all)) {
    wrapped[name] = (args, context) => {
      app.clock.forward();
      return handler(args ?? {}, context);
    };
  }
  return wrapped;
}

/** The remote-control commands as a worker step (no start-up work of its own). */
export class RemoteControlStep implements WorkerStep {
  readonly name = 'Remote control';
  readonly #context: ClusterContext;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  commands(worker: WorkerHost): Record<string, MailboxHandler> {
    return this.#context.owns(worker) ? remoteControlCommands(worker, this.#context) : {};
  }
}

/** Task ids from a `task_id`/`ids` argument: one string or a list; duplicates dropped, order kept. */
function uniqueIds(value: unknown): string[] {
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return [...new Set(list.filter((id): id is string => typeof id === 'string' && id !== ''))];
}

/** The request for a task id this worker holds (running, reserved or waiting for its ETA). */
function findRequest(worker: WorkerHost, id: string): HeldTask | undefined {
  const running = worker.state.active.get(id);
  if (running) return running;
  for (const request of worker.state.reserved) if (request.id === id) return request;
  return undefined;
}

/** Reserved but neither running nor held for an ETA (Celery's reserved minus active; ETA tasks are `scheduled`). */
function reservedRequests(worker: WorkerHost): HeldTask[] {
  const held = new Set(worker.scheduled().map(({ request }) => request));
  return [...worker.state.reserved].filter((request) => !worker.state.active.has(request.id) && !held.has(request));
}

/** The queue `add_consumer` names: a configured/known one, or Celery's `Queue(name, Exchange(exchange, type), key)`. */
function taskQueue(worker: WorkerHost, name: string, args: Record<string, unknown>): Queue {
  const exchange = typeof args['exchange'] === 'string' ? args['exchange'] : null;
  const type = typeof args['exchange_type'] === 'string' ? args['exchange_type'] : 'direct';
  const routingKey = typeof args['routing_key'] === 'string' ? args['routing_key'] : null;
  if (exchange === null && routingKey === null && type === 'direct') return worker.app.router.queue(name);
  if (type !== 'direct' && type !== 'topic' && type !== 'fanout' && type !== 'headers') {
    throw new TypeError(`unknown exchange type ${JSON.stringify(type)}`);
  }
  return new Queue(name, { exchange: new Exchange(exchange ?? name, { type }), routingKey: routingKey ?? name });
}

function optionalSeconds(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? seconds : null;
}

/** What this worker names in its reply to a kq worker's watchers-only hello: its Gossip's hints, or while Gossip starts its own. */
function helloHints(worker: WorkerHost, context: ClusterContext): MingleHints | undefined {
  if (context.gossip) return context.gossip.mingleHints();
  if (context.gossipStarting) return startingHints(worker.hostname, context.neighbours, context.options.gossipWatchers ?? DEFAULT_GOSSIP_WATCHERS);
  return undefined;
}
