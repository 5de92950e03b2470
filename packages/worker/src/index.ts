// @kq/worker — Celery for Node.
export { App, type AppWorkerOptions } from './app';
export type { AppContract } from './app-contract';
export type { TaskApp } from './task-app';
export { normalizeSettings, type CelerySettings } from './celery-settings';
export { DEFAULT_CONFIG, type AppConfig, type DateDoneForm, type EtaStrategy, type Route, type TaskRoutes } from './config';
export { Control, type RevokeOptions } from './control';
export * from './errors';
export { PythonException } from './python-exception';
export { Logger, formatLogLine, parseLogLevel, type LogFormat, type LogLevel, type LogRecord, type LogSink } from './logger';
export { jsonLogSink } from './log-json-sink';
export { fileLogSink } from './log-file-sink';
export * from './protocol/index';
export * from './results/index';
export { Router, type ResolvedRoute } from './router';
export { onStopSignals, stopSignalReceived } from './stop-signals';
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
  type CanvasApp,
  type ErrbackRequest,
  type FreezeOptions,
  type GroupOf,
  type ResultsOf,
  type SignatureInput,
  type SignatureOptions,
  type WireOptions,
} from './canvas/index';
export { Task, type ApplyOptions, type TaskCall, type TaskFunction, type TaskOptions } from './task';
export { TaskContext, type RetryOptions, type TaskRequest } from './task-context';
export { parseRateLimit, TokenBucket } from './rate-limit';
export { backoffCountdown } from '@kq/core';
export { Worker, type WorkerEvents, type WorkerOptions } from './worker/worker';
export { REDELIVERIES_HEADER } from './worker/redelivery';
export { Request, type RequestInfo } from './worker/request';
export { AsyncPool } from './pool/async-pool';
export { loadAppModule } from './pool/load-app-module';
export { ChildPool, type ChildPoolOptions } from './pool/child-pool';
export { Autoscaler, type AutoscaleOptions, type AutoscalerInfo } from './pool/autoscaler';
export { POOL_CHILD_ENV } from './pool/child-protocol';
export type { Pool, PoolJob, PoolKind, SchedulingStrategy } from './pool/pool';
export { WorkerState } from './worker/worker-state';
export type { WorkerStep } from './worker/bootstep';
export * from './events/index';
export * from './cluster/index';
export * from './beat/index';
export * from './periodic/index';
