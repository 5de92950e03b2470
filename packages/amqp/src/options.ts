import type { FailoverStrategy } from './broker-alternates';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { resolveTlsOptions, type RetryPolicy, type TlsOption } from '@kq/core';

export type DelayQueueType = 'quorum' | 'classic';

/** Options of `AmqpTransport` (and of `createTransport('amqp://…', options)`). */
export interface AmqpTransportOptions {
  /**
   * Heartbeat interval in seconds; 0 turns heartbeats off. Default: `?heartbeat=` from the URL, else what the
   * broker proposes (60 s on RabbitMQ).
   */
  heartbeat?: number;
  /**
   * TLS: kq's names (`{ caFile, certFile, keyFile, certReqs }`), Kombu's (Celery's `broker_use_ssl`: `{ ca_certs,
   * certfile, keyfile, cert_reqs }` or their `ssl_` forms; `ssl` is accepted as this option's name too), or any
   * `tls.connect` option (`ca`, `cert`, `key`, `servername`...). Given, it turns TLS on for an `amqp://` URL as well,
   * as `broker_use_ssl` does in Kombu. See docs/security.md.
   */
  tls?: TlsOption;
  /** Longest wait for the TCP connection and the AMQP handshake, in ms. Default 10 000. */
  connectTimeout?: number;
  /** Shown by `rabbitmqctl list_connections client_properties` and the management UI. */
  connectionName?: string;
  /** Extra AMQP client properties sent on connect. */
  clientProperties?: Record<string, unknown>;
  frameMax?: number;
  channelMax?: number;
  /**
   * Publisher confirms (default true): `publish` resolves once the broker has the message and rejects when it
   * refuses it. With false, `publish` resolves once the message is written to the socket (Celery's default).
   */
  publisherConfirms?: boolean;
  /** Waits between reconnect attempts after the connection is lost. Default: 100 ms growing by 500 ms to 5 s, 20% jitter, forever. */
  reconnectPolicy?: RetryPolicy;
  /**
   * How long an operation (a publish awaiting its confirm, a declaration, a consumer resuming) waits for a lost
   * connection to come back before it fails with `ConnectionLost`. Default 30 000 ms.
   */
  recoveryTimeout?: number;
  /** How often a consumer whose queue was deleted checks whether the queue exists again, in ms. Default 1000. */
  resubscribeInterval?: number;
  /**
   * Queue type of the delay ladder (`celery_delayed_*`, Celery's `broker_native_delayed_delivery_queue_type`).
   * Default: `quorum` as Celery's (at-least-once dead-lettering, survives a broker crash mid-hop) on RabbitMQ ≥ 3.10,
   * else `classic`. Every client of a vhost, Celery included, must use the same type.
   */
  delayQueueType?: DelayQueueType;
  /**
   * Kombu's native-delayed-delivery name prefix: `<prefix>_celery_delayed_<L>` and `<prefix>_celery_delayed_delivery`.
   * Default none: Celery 5.5+'s `celery_delayed_0` … `celery_delayed_27` and `celery_delayed_delivery`, shared with
   * Celery workers in the vhost.
   */
  delayLadderPrefix?: string;
  /** How long `close()` waits for outstanding publisher confirms, in ms. Default 5000. */
  closeTimeout?: number;
  /**
   * With several brokers in the URL (`amqp://h1//;amqp://h2//`, a cluster's nodes), the order they are tried in when a
   * connection fails or is lost: Kombu's `failover_strategy`, `round-robin` (default) or `shuffle`.
   */
  failoverStrategy?: FailoverStrategy;
}

export interface ResolvedAmqpOptions {
  heartbeat: number | undefined;
  tls: TlsConnectionOptions | undefined;
  connectTimeout: number;
  connectionName: string | undefined;
  clientProperties: Record<string, unknown>;
  frameMax: number | undefined;
  channelMax: number | undefined;
  publisherConfirms: boolean;
  reconnectPolicy: RetryPolicy;
  recoveryTimeout: number;
  resubscribeInterval: number;
  delayQueueType: DelayQueueType | undefined;
  delayLadderPrefix: string;
  closeTimeout: number;
  failoverStrategy: FailoverStrategy;
}

export const DEFAULT_RECONNECT_POLICY: RetryPolicy = {
  maxRetries: undefined,
  intervalStart: 100,
  intervalStep: 500,
  intervalMax: 5000,
  jitter: 0.2,
};

export function resolveOptions(options: AmqpTransportOptions): ResolvedAmqpOptions {
  return {
    heartbeat: options.heartbeat,
    tls: resolveTlsOptions((options as { ssl?: TlsOption }).ssl, options.tls),
    connectTimeout: options.connectTimeout ?? 10_000,
    connectionName: options.connectionName,
    clientProperties: { ...(options.clientProperties ?? {}) },
    frameMax: options.frameMax,
    channelMax: options.channelMax,
    publisherConfirms: options.publisherConfirms ?? true,
    reconnectPolicy: { ...DEFAULT_RECONNECT_POLICY, ...(options.reconnectPolicy ?? {}) },
    recoveryTimeout: options.recoveryTimeout ?? 30_000,
    resubscribeInterval: options.resubscribeInterval ?? 1000,
    delayQueueType: options.delayQueueType,
    delayLadderPrefix: options.delayLadderPrefix ?? '',
    closeTimeout: options.closeTimeout ?? 5000,
    failoverStrategy: options.failoverStrategy ?? (options as { failover_strategy?: FailoverStrategy }).failover_strategy ?? 'round-robin',
  };
}
