import {
  BoundedMap,
  Consumer,
  KqError,
  Producer,
  Queue,
  isReadyState,
  registerResultBackend,
  type Connection,
  type Delivery,
  type ResultBackend,
  type ResultMeta,
  type RetryPolicy,
  type StoreResultOptions,
  type TaskState,
  type WaitForResultOptions,
  waitForResultMeta,
  type ResultWaiter,
} from '@kq/core';

export interface RpcResultBackendOptions {
  /** The app's broker connection: results travel as messages on it. */
  connection: Connection;
  /**
   * The app's reply queue name (Celery's `app.thread_oid`): sent tasks carry it as `reply_to`, and results for them
   * come back to the queue of that name.
   */
  oid: string;
  /** Celery's `result_expires` (ms): the reply queue's `x-expires`. Default 1 day; 0 = no expiry argument. */
  resultExpiresMs?: number;
  /** Celery's `result_persistent`: results are published with delivery mode 2 instead of 1. Default false. */
  persistent?: boolean;
  /** Celery's `result_serializer`. Default `json`. */
  serializer?: string;
  /** Celery's `result_accept_content`. Default `['json']`. */
  accept?: readonly string[];
  /**
   * Most results kept for `get()`/`waitFor()` (the latest state of each task, oldest dropped first). Results of tasks
   * nobody asks about would otherwise pile up. Default 10 000.
   */
  maxBufferedResults?: number;
}

/** Celery's `RPCBackend.retry_policy` (seconds 0/1/1, 20 retries), in ms. */
const RESULT_RETRY_POLICY: RetryPolicy = { maxRetries: 20, intervalStart: 0, intervalStep: 1000, intervalMax: 1000 };
const DEFAULT_EXPIRES_MS = 86_400_000;

/**
 * Celery's `rpc://` result backend (docs/wire.md#rpc): the worker publishes each state as a message to the default
 * exchange with the task's `reply_to` as routing key and its id as `correlation_id`; the client that sent the task
 * consumes its own reply queue (`<oid>`: non-durable, auto-delete, `x-expires` = result_expires) and keeps the latest
 * state per task. Results are only visible to the client that sent the task, as in Celery; nothing is polled.
 */
export class RpcResultBackend implements ResultBackend {
  readonly name = 'rpc';
  readonly pushes = true;
  /** Celery's text (`E_NO_CHORD_SUPPORT`): each result goes to its one caller, so no worker can see the header's. */
  readonly chordsRefused =
    'The "rpc" result backend does not support chords!\n\nNote that a group chained with a task is also upgraded to be a chord, ' +
    'as this pattern requires synchronization.\n\nResult backends that supports chords: Redis, Database, Memcached, and more.';
  readonly connection: Connection;
  readonly oid: string;
  /** The queue results for this client arrive on, declared exactly as Celery ≤ 5.6 declares it. */
  readonly resultQueue: Queue;
  readonly #persistent: boolean;
  readonly #serializer: string;
  readonly #accept: readonly string[];
  readonly #maxBuffered: number;
  readonly #producer: Producer;
  /** Latest meta per task id, oldest first (re-inserted on update). */
  readonly #buffer: BoundedMap<string, ResultMeta>;
  readonly #waiters = new Map<string, Set<ResultWaiter>>();
  #listening: Promise<Consumer> | undefined;
  #closed = false;

  constructor(options: RpcResultBackendOptions) {
    this.connection = options.connection;
    this.oid = options.oid;
    const expiresMs = options.resultExpiresMs ?? DEFAULT_EXPIRES_MS;
    this.resultQueue = new Queue(this.oid, {
      durable: false,
      autoDelete: true,
      ...(expiresMs > 0 ? { expires: expiresMs } : {}),
    });
    this.#persistent = options.persistent ?? false;
    this.#serializer = options.serializer ?? 'json';
    this.#accept = options.accept ?? ['json'];
    this.#maxBuffered = options.maxBufferedResults ?? 10_000;
    this.#buffer = new BoundedMap(this.#maxBuffered);
    this.#producer = new Producer(this.connection, { serializer: this.#serializer });
  }

  /** Worker side: publishes the state to the task's `reply_to` queue. Nothing is sent when the task has no `reply_to`. */
  async store(meta: ResultMeta, options: StoreResultOptions = {}): Promise<void> {
    this.#assertOpen();
    const replyTo = options.replyTo;
    if (!replyTo) return;
    await this.#producer.publish(replyBody(meta), {
      exchange: '',
      routingKey: replyTo,
      correlationId: options.correlationId || meta.task_id,
      deliveryMode: this.#persistent ? 2 : 1,
      serializer: this.#serializer,
      retryPolicy: RESULT_RETRY_POLICY,
    });
  }

  /** The latest state received for the task, or null (PENDING) when none has arrived. */
  async get(taskId: string): Promise<ResultMeta | null> {
    this.#assertOpen();
    return this.#buffer.get(taskId) ?? null;
  }

  /** Declares and starts consuming the reply queue before the first task is sent, as Celery's client does. */
  async onTaskCall(_taskId: string): Promise<void> {
    this.#assertOpen();
    await this.#listen();
  }

  waitFor(taskId: string, options: WaitForResultOptions = {}): Promise<ResultMeta> {
    if (this.#closed) return Promise.reject(closedError());
    const buffered = this.#buffer.get(taskId);
    if (buffered && isReadyState(buffered.status)) return Promise.resolve(buffered);
    return waitForResultMeta(
      taskId,
      options,
      (waiter) => {
        const waiters = this.#waiters.get(taskId) ?? new Set<ResultWaiter>();
        this.#waiters.set(taskId, waiters);
        waiters.add(waiter);
        return () => {
          waiters.delete(waiter);
          if (waiters.size === 0 && this.#waiters.get(taskId) === waiters) this.#waiters.delete(taskId);
        };
      },
      (waiter) => void this.#listen().catch((error: unknown) => waiter.reject(error)),
    );
  }

  /** Forgets the buffered state of the task (the broker keeps nothing once a reply was consumed). */
  async forget(taskId: string): Promise<void> {
    this.#buffer.delete(taskId);
  }

  /** Stops consuming (the auto-delete reply queue then goes away); whoever still waits is rejected. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const [taskId, waiters] of [...this.#waiters]) for (const waiter of [...waiters]) waiter.reject(closedError(taskId));
    this.#waiters.clear();
    const consumer = await this.#listening?.catch(() => undefined);
    this.#listening = undefined;
    await consumer?.cancel();
  }

  #listen(): Promise<Consumer> {
    this.#listening ??= (async () => {
      const consumer = new Consumer(this.connection, {
        queues: [this.resultQueue],
        noAck: true,
        accept: this.#accept,
        onMessage: (body, delivery) => this.#onReply(body, delivery),
      });
      // A reply that cannot be decoded is dropped by the consumer (it was consumed with noAck); it never stops it.
      consumer.on('error', () => undefined);
      await consumer.consume();
      if (this.#closed) await consumer.cancel();
      return consumer;
    })().catch((error: unknown) => {
      this.#listening = undefined;
      throw error;
    });
    return this.#listening;
  }

  #onReply(body: unknown, delivery: Delivery): void {
    if (!isRecord(body) || typeof body['status'] !== 'string') return;
    const bodyTaskId = typeof body['task_id'] === 'string' ? body['task_id'] : undefined;
    // Celery matches on correlation_id and falls back to the body's task_id (replies from old workers).
    const taskId = delivery.properties.correlationId || bodyTaskId;
    if (!taskId) return;
    const meta = toResultMeta(body, bodyTaskId ?? taskId);
    const previous = this.#buffer.get(taskId);
    // A late non-ready state (e.g. a redelivered STARTED) does not hide a result that already arrived.
    if (previous && isReadyState(previous.status) && !isReadyState(meta.status)) return;
    this.#buffer.delete(taskId);
    this.#buffer.set(taskId, meta);
    if (isReadyState(meta.status)) for (const waiter of [...(this.#waiters.get(taskId) ?? [])]) waiter.resolve(meta);
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError();
  }
}

/**
 * Registers `rpc://` in core's result backend registry. Its factory needs `options.connection` (the app's broker
 * connection) and `options.oid` (the app's reply queue name); `resultExpiresMs` / `persistent` are optional
 * (Celery's `result_expires` in seconds and `result_persistent` are accepted too).
 */
export function registerRpcResultBackend(): void {
  registerResultBackend('rpc', (_url, options) => {
    const connection = options['connection'];
    const oid = options['oid'];
    if (!isConnection(connection)) {
      throw new KqError(
        "The rpc:// result backend sends results over the broker, so it needs the app's broker connection: " +
          "createResultBackend('rpc://', { connection, oid }) where connection is a @kq/core Connection (an App passes its own).",
      );
    }
    if (typeof oid !== 'string' || oid === '') {
      throw new KqError(
        "The rpc:// result backend needs options.oid, the name of this client's reply queue (the reply_to of the tasks it " +
          "sends), e.g. createResultBackend('rpc://', { connection, oid: randomUUID() }).",
      );
    }
    const expiresSeconds = options['result_expires'];
    const expiresMs = options['resultExpiresMs'] ?? (typeof expiresSeconds === 'number' ? expiresSeconds * 1000 : undefined);
    const persistent = options['persistent'] ?? options['result_persistent'];
    return new RpcResultBackend({
      connection,
      oid,
      ...(typeof expiresMs === 'number' ? { resultExpiresMs: expiresMs } : {}),
      ...(typeof persistent === 'boolean' ? { persistent } : {}),
      ...(typeof options['serializer'] === 'string' ? { serializer: options['serializer'] } : {}),
    });
  });
}

/** The reply body: Celery ≤ 5.6's fields first (task_id, status, result, traceback, children), then the rest of the meta. */
function replyBody(meta: ResultMeta): Record<string, unknown> {
  const { task_id, status, result, traceback, children, ...rest } = meta;
  const body: Record<string, unknown> = {
    task_id,
    status,
    result: result === undefined ? null : result,
    traceback: traceback ?? null,
    children: children ?? null,
  };
  for (const [field, value] of Object.entries(rest)) if (value !== undefined) body[field] = value;
  return body;
}

function toResultMeta(body: Record<string, unknown>, taskId: string): ResultMeta {
  const traceback = body['traceback'];
  const children = body['children'];
  const dateDone = body['date_done'];
  return {
    ...body,
    status: body['status'] as TaskState,
    result: body['result'] === undefined ? null : body['result'],
    traceback: typeof traceback === 'string' ? traceback : null,
    children: Array.isArray(children) ? children : null,
    date_done: typeof dateDone === 'string' ? dateDone : null,
    task_id: taskId,
  };
}

function isConnection(value: unknown): value is Connection {
  // Duck-typed: a Connection from another copy of @kq/core (a bundled app) is still a connection.
  return isRecord(value) && typeof value['ensure'] === 'function' && typeof value['createChannel'] === 'function';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function closedError(taskId?: string): KqError {
  return new KqError(
    taskId === undefined
      ? 'This result backend is closed; create a new one (or use the app that owns it).'
      : `The result backend was closed while waiting for the result of task ${taskId}.`,
  );
}
