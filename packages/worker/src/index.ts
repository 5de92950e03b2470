// @kq/worker — Celery for Node.
export { App, type AppWorkerOptions } from './app/app';
export type { AppContract, CanvasApp, CanvasAppView, TaskApp, TaskTypes } from './contract/app-contract';
export { normalizeSettings, type CelerySettings } from './config/celery-settings';
export { DEFAULT_CONFIG, type AppConfig, type DateDoneForm, type EtaStrategy, type Route, type TaskRoutes } from './config/config';
export { Control, type RevokeOptions } from './control/control';
export * from './errors/errors';
export { PythonException } from './errors/python-exception';
export { Logger, formatLogLine, parseLogLevel, type LogFormat, type LogLevel, type LogRecord, type LogSink } from './log/logger';
export { jsonLogSink } from './log/log-json-sink';
export { fileLogSink } from './log/log-file-sink';
export * from './protocol/index';
export * from './results/index';
export { Router, type ResolvedRoute } from './send/router';
export { onStopSignals, stopSignalReceived } from './platform/stop-signals';
export {
  Chain,
  Chord,
  Chunks,
  Group,
  MapSignature,
  Signature,
  chain,
  chord,
  group,
  type AnySignature,
  type ErrbackRequest,
  type FreezeOptions,
  type GroupOf,
  type ResultsOf,
  type SignatureInput,
  type SignatureOptions,
  type WireOptions,
} from './canvas/index';
export { Task, TaskContext, type ApplyOptions, type TaskCall, type TaskFunction, type TaskOptions, type TypedTasks } from './task/task';
export type { RetryOptions, TaskRequest } from './task/task-request';
export { parseRateLimit, TokenBucket } from './runtime/rate-limit';
export { backoffCountdown } from '@kq/core';
export { Worker } from './runtime/worker';
export type { WorkerEvents, WorkerOptions } from './runtime/worker-options';
export { REDELIVERIES_HEADER } from './runtime/redelivery';
export { Request } from './runtime/request';
export type { HeldTask, RequestInfo } from './runtime/held-task';
export type { WorkerHost } from './runtime/worker-host';
export { AsyncPool } from './pool/async-pool';
export { loadAppModule } from './app/load-app-module';
export { ChildPool, type ChildPoolOptions } from './pool/child-pool';
export { Autoscaler, type AutoscaleOptions, type AutoscalerInfo } from './pool/autoscaler';
export { POOL_CHILD_ENV } from './pool/child-protocol';
export type { Pool, PoolJob, PoolKind, SchedulingStrategy } from './pool/pool';
export { WorkerState } from './runtime/worker-state';
export type { StepFinishing, WorkerStep } from './runtime/bootstep';
export * from './events/index';
export * from './cluster/index';
export * from './beat/index';
export * from './beat/periodic/index';
