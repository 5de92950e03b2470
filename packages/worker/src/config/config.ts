import type { LogFormat } from '../log/logger';
import { DEFAULT_MAX_MESSAGE_SIZE, type Queue, type QueueType, type RetryPolicy, type TlsOption } from '@kq/core';

/** Where a task goes: a queue name (Celery's `{'queue': ...}`), or exchange + routing key. */
export interface Route {
  queue?: string;
  exchange?: string;
  exchangeType?: 'direct' | 'topic' | 'fanout';
  routingKey?: string;
  priority?: number;
}

/** Celery's `task_routes`: task-name glob → route, or a function returning a route (or undefined to fall through). */
export type TaskRoutes =
  | Record<string, Route | string>
  | ((name: string, args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>) => Route | string | undefined);

/** How ETA/countdown tasks wait: in the broker (delayed delivery) or held by the worker (Celery's way). */
export type EtaStrategy = 'broker' | 'worker';

/** `resultDateDone`: with a UTC offset (Celery 5.3+) or naive UTC (Celery 5.2). */
export type DateDoneForm = 'aware' | 'naive';

/**
 * App configuration: Celery's setting names in camelCase (`task_acks_late` → `taskAcksLate`), same defaults.
 * Durations are in seconds where Celery's are, so settings copy across unchanged.
 */
export interface AppConfig {
  /** `broker_url`. Default `memory://`. */
  broker: string;
  /** `result_backend`: `redis://…`, `rpc://`, `memory://`, or null for none. */
  backend: string | null;
  brokerTransportOptions: Record<string, unknown>;
  /**
   * Largest task message body, in bytes as sent (kq only: Celery has no such setting). `sendTask` refuses a larger one
   * with `MessageTooLarge`; a worker rejects one unread (to the dead-letter queue, with the reason), and a compressed
   * body may not inflate past it. Default 64 MiB; null for no limit (compressed bodies still stop at 512 MiB).
   */
  maxMessageSize: number | null;
  /**
   * `broker_use_ssl`: TLS to the broker by Kombu's names (`{ ssl_cert_reqs, ssl_ca_certs, ssl_certfile, ssl_keyfile }`,
   * py-amqp's `ca_certs`/`certfile`/`keyfile`/`cert_reqs`) or kq's (`{ caFile, certFile, keyFile, certReqs }`), or
   * true. Turns TLS on for redis:// and amqp:// URLs too; PostgreSQL takes libpq's `sslmode`/`sslrootcert` in the URL.
   */
  brokerUseSsl: TlsOption | null;
  /**
   * `broker_connection_max_retries`: connect attempts before a worker gives up on an unreachable broker, each one
   * logged (2 s, 4 s, … up to 30 s apart, as Celery); null retries for ever. One-shot CLI commands try once.
   */
  brokerConnectionMaxRetries: number | null;
  resultBackendTransportOptions: Record<string, unknown>;
  /** `redis_backend_use_ssl`: TLS to a Redis result backend, by the same names as `brokerUseSsl`. */
  redisBackendUseSsl: TlsOption | null;
  taskDefaultQueue: string;
  /** null ⇒ the queue name. */
  taskDefaultExchange: string | null;
  taskDefaultExchangeType: 'direct' | 'topic' | 'fanout';
  /** null ⇒ the queue name. */
  taskDefaultRoutingKey: string | null;
  taskDefaultDeliveryMode: 1 | 2;
  taskDefaultPriority: number | null;
  /** `x-max-priority` for queues kq creates (RabbitMQ). */
  taskQueueMaxPriority: number | null;
  /** The type of the queues kq creates (Celery 5.5's `task_default_queue_type`): `'quorum'` replicates them on a cluster. */
  taskDefaultQueueType: QueueType;
  /**
   * `x-delivery-limit` for the quorum queues kq creates (kq only: Celery has no such setting, so a Celery worker that
   * declares the same queue must pass it in its `task_queues` `queue_arguments`, or RabbitMQ refuses the mismatch).
   */
  taskDefaultDeliveryLimit: number | null;
  /** Extra queues, declared by workers that consume them. */
  taskQueues: readonly Queue[];
  taskRoutes: TaskRoutes | null;
  taskCreateMissingQueues: boolean;
  taskSerializer: string;
  resultSerializer: string;
  acceptContent: readonly string[];
  taskCompression: string | null;
  taskProtocol: 2;
  taskPublishRetry: boolean;
  taskPublishRetryPolicy: RetryPolicy;
  taskAcksLate: boolean;
  taskAcksOnFailureOrTimeout: boolean;
  taskRejectOnWorkerLost: boolean;
  taskIgnoreResult: boolean;
  taskTrackStarted: boolean;
  taskStoreErrorsEvenIfIgnored: boolean;
  /** Hard limit, seconds. */
  taskTimeLimit: number | null;
  /** Soft limit, seconds. */
  taskSoftTimeLimit: number | null;
  taskDefaultRateLimit: string | number | null;
  taskSendSentEvent: boolean;
  /** Seconds; 0 = never expire. */
  resultExpires: number;
  resultExtended: boolean;
  resultPersistent: boolean;
  /**
   * How results' `date_done` is written: `aware` (default), Celery 5.4+'s `2026-11-21T13:12:05.748000+00:00`; or
   * `naive`, Celery 5.2's `datetime.utcnow().isoformat()` (`2026-11-21T13:12:05.748000`, UTC without an offset), for
   * a fleet whose Python 5.2 code subtracts a naive datetime from `result.date_done` (an aware one raises TypeError).
   */
  resultDateDone: DateDoneForm;
  /** Seconds between `celery.chord_unlock` polls on backends without a native chord join (Celery's default 1). */
  resultChordRetryInterval: number;
  workerPrefetchMultiplier: number;
  workerConcurrency: number;
  /** How the worker writes its log: Celery's text lines, or one JSON object per line (`kq worker --log-format json`). */
  workerLogFormat: LogFormat;
  workerSendTaskEvents: boolean;
  /**
   * Redeliveries of one message (a crashed worker, a lost connection, a shutdown that gave it back) before kq fails
   * it with WorkerLostError instead of running it again: a task that kills its worker must not loop forever.
   */
  workerMaxRedeliveries: number;
  /** Allow the `pool_restart` remote-control command (Celery's `worker_pool_restarts`, default false). */
  workerPoolRestarts: boolean;
  /** Seconds a warm shutdown waits for running tasks before requeueing them. */
  workerShutdownTimeout: number;
  /**
   * Where ETA/countdown tasks wait. Default `worker` (Celery's way): senders publish them at once and the worker that
   * takes one holds it until its time, with the prefetch raised by one per held task (bounded by
   * `workerEtaTaskLimit`). The message stays unacknowledged and so stays the broker's: if the worker dies it goes back
   * to its queue (on Redis under kq's renewed lease, so no visibility-timeout duplicates), where any Celery worker —
   * a Python one too — can run it. `broker`: an explicit choice for kq-only fleets — senders publish with the broker's
   * delay and a kq worker defers what it receives early (RabbitMQ: Kombu 5.5's `celery_delayed_*` ladder, whole
   * seconds; Redis: `_kq.delayed`, which only kq processes promote, so Python workers never see those tasks).
   */
  etaStrategy: EtaStrategy | null;
  /**
   * Celery 5.6's `worker_eta_task_limit`: the most unacknowledged messages (ETA tasks held included) a worker takes
   * at once; the prefetch is never raised past it, so once that many are held the broker keeps the rest until some
   * run. null = no limit.
   */
  workerEtaTaskLimit: number | null;
  timezone: string;
  /**
   * `security_key`: path of the PEM private key (RSA) that signs the messages this app sends with the `auth`
   * serializer (Celery's message signing, docs/security.md#signed-messages). Used once `taskSerializer` or
   * `acceptContent` names `auth`, or `app.setupSecurity()` is called.
   */
  securityKey: string | null;
  /** `security_key_password` (Celery 5.3+): the passphrase of an encrypted `securityKey`. */
  securityKeyPassword: string | null;
  /** `security_certificate`: path of the PEM certificate of `securityKey`; signed messages name it as their signer. */
  securityCertificate: string | null;
  /**
   * `security_cert_store`: the certificates whose signatures are trusted: a directory (every file in it) or a glob
   * (`/etc/ssl/certs/*.pem`), one PEM certificate a file. An expired certificate in it stops the app, as in Celery.
   */
  securityCertStore: string | null;
  /** `security_digest`: the digest signatures use (`sha256`, Celery's default); both sides need the same. */
  securityDigest: string;
  /** `security_serializer`: what serializes a message before it is signed (`json`, Celery's default). */
  securitySerializer: string;
  /**
   * kq only: sign in the layout Celery 5.2–5.4 read (true), instead of Celery 5.5+'s (false, the default). The two
   * Celery layouts cannot read each other; kq reads both whatever this says.
   */
  securityLegacyLayout: boolean;
  controlExchange: string;
  eventExchange: string;
}

export const DEFAULT_CONFIG: Readonly<AppConfig> = {
  broker: 'memory://',
  backend: null,
  brokerTransportOptions: {},
  maxMessageSize: DEFAULT_MAX_MESSAGE_SIZE,
  brokerUseSsl: null,
  brokerConnectionMaxRetries: 100,
  resultBackendTransportOptions: {},
  redisBackendUseSsl: null,
  taskDefaultQueue: 'celery',
  taskDefaultExchange: null,
  taskDefaultExchangeType: 'direct',
  taskDefaultRoutingKey: null,
  taskDefaultDeliveryMode: 2,
  taskDefaultPriority: null,
  taskQueueMaxPriority: null,
  taskDefaultQueueType: 'classic',
  taskDefaultDeliveryLimit: null,
  taskQueues: [],
  taskRoutes: null,
  taskCreateMissingQueues: true,
  taskSerializer: 'json',
  resultSerializer: 'json',
  acceptContent: ['json'],
  taskCompression: null,
  taskProtocol: 2,
  taskPublishRetry: true,
  taskPublishRetryPolicy: { maxRetries: 3, intervalStart: 0, intervalStep: 200, intervalMax: 1000 },
  taskAcksLate: false,
  taskAcksOnFailureOrTimeout: true,
  taskRejectOnWorkerLost: false,
  taskIgnoreResult: false,
  taskTrackStarted: false,
  taskStoreErrorsEvenIfIgnored: false,
  taskTimeLimit: null,
  taskSoftTimeLimit: null,
  taskDefaultRateLimit: null,
  taskSendSentEvent: false,
  resultExpires: 86_400,
  resultExtended: false,
  resultPersistent: false,
  resultDateDone: 'aware',
  resultChordRetryInterval: 1,
  workerPrefetchMultiplier: 4,
  workerConcurrency: 10,
  workerLogFormat: 'text',
  workerSendTaskEvents: false,
  workerMaxRedeliveries: 10,
  workerPoolRestarts: false,
  workerShutdownTimeout: 30,
  etaStrategy: null,
  workerEtaTaskLimit: null,
  timezone: 'UTC',
  securityKey: null,
  securityKeyPassword: null,
  securityCertificate: null,
  securityCertStore: null,
  securityDigest: 'sha256',
  securitySerializer: 'json',
  securityLegacyLayout: false,
  controlExchange: 'celery',
  eventExchange: 'celeryev',
};
