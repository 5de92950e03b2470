import type { DeliveryInfo, MessageProperties } from '@kq/core';
import type { TaskMessage } from '../protocol/index';

/** What a running task knows about its invocation (Celery's `task.request`). */
export interface TaskRequest {
  readonly id: string;
  readonly name: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly retries: number;
  readonly eta: Date | null;
  readonly expires: Date | null;
  readonly rootId: string | null;
  readonly parentId: string | null;
  readonly group: string | null;
  readonly groupIndex: number | null;
  readonly origin: string | null;
  readonly correlationId: string;
  readonly replyTo: string | null;
  readonly priority: number | null;
  readonly timeLimit: number | null;
  readonly softTimeLimit: number | null;
  /** Node name of the worker running it. */
  readonly hostname: string;
  readonly deliveryInfo: DeliveryInfo | null;
  /**
   * The message's properties (Celery's `request.properties`): `appId`, `priority`, `correlationId`, `replyTo`... as the
   * sender set them.
   */
  readonly properties: Readonly<MessageProperties>;
  /** Custom headers sent with `applyAsync({ headers })`. */
  readonly headers: Readonly<Record<string, unknown>>;
  /**
   * W3C `traceparent` of this run's span when the worker traces (`@opentelemetry/api`), so what the task sends
   * continues the trace even where the span is not active (a pool child with no OpenTelemetry SDK of its own).
   */
  readonly traceparent?: string | null;
  readonly message: TaskMessage;
}

export interface RetryOptions {
  /** Seconds until the retry runs (default: the task's `defaultRetryDelay`, 180 s). */
  countdown?: number;
  eta?: Date;
  /** The error that caused the retry: stored with the RETRY state and re-thrown when retries run out. */
  exc?: unknown;
  /** Overrides the task's `maxRetries` for this call; null = unlimited. */
  maxRetries?: number | null;
  args?: readonly unknown[];
  kwargs?: Record<string, unknown>;
  queue?: string;
  priority?: number;
}
