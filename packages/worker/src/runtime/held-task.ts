import type { Delivery } from '@kq/core';
import type { TaskMessage } from '../protocol/index';

/** Celery's `Request.info()`: what `inspect active/reserved/scheduled` report about a task. */
export interface RequestInfo {
  id: string;
  name: string;
  args: unknown;
  kwargs: unknown;
  type: string;
  hostname: string;
  time_start: number | null;
  acknowledged: boolean;
  /** `redelivered` is null where the broker marks only redeliveries (Redis, as Celery reports it there). */
  delivery_info: { exchange: string; routing_key: string; priority: number | null; redelivered: boolean | null };
  worker_pid: number | null;
}

/**
 * A task a worker holds, as its state, its events and remote control read it. `Request` implements it; they take
 * this, so a request and the worker it reports to need not import each other.
 */
export interface HeldTask {
  readonly id: string;
  readonly name: string;
  readonly message: TaskMessage;
  readonly delivery: Delivery;
  /** Epoch seconds the run started, null until then. */
  readonly timeStart: number | null;
  /** Epoch seconds this worker received the message. */
  readonly receivedAt: number;
  info(safe?: boolean): RequestInfo;
  /** Ends a running task (revoke with terminate). */
  terminate(reason: string): void;
  /** Gives a running task's message back because the worker is stopping. */
  abandon(reason: string): void;
}
