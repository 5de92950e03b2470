import type Pino from 'pino';
import { lazyRequire } from './lazy-require';
import { PINO_LEVELS, type LogSink } from './log-record';
import { activeTraceIds } from './telemetry/task-tracing';

/** pino, loaded with the first JSON sink (see lazy-require.ts). */
const loadPino = lazyRequire<typeof Pino>('pino');

/**
 * `--log-format json`: one JSON object per line, written by pino (the ecosystem's fast structured logger): `time`
 * (ISO), `level`, `logger` (the worker's node name, or the task's name for `ctx.log`), `message`, the record's fields
 * (`task_id`, `task_name`, …) and, while a traced task runs, `trace_id` and `span_id`. To stderr, or appended to
 * `destination`.
 */
export function jsonLogSink(options: { destination?: string } = {}): LogSink & { close(): Promise<void> } {
  const pino = loadPino();
  const stream = options.destination ? pino.destination({ dest: options.destination, append: true, mkdir: true, sync: true }) : pino.destination({ fd: 2, sync: true });
  const logger = pino(
    {
      level: 'debug',
      base: null,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
  const sink = (record: Parameters<LogSink>[0]): void => {
    const trace = activeTraceIds();
    logger[PINO_LEVELS[record.level]]({ logger: record.logger, ...record.fields, ...trace }, record.message);
  };
  return Object.assign(sink, {
    structured: true as const,
    close: () =>
      new Promise<void>((resolve) => {
        stream.flush?.();
        stream.end();
        stream.once('close', () => resolve());
        setTimeout(resolve, 500).unref();
      }),
  });
}
