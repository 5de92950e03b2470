import { LOG_LEVELS, type LogLevel, type LogSink } from './log-record';
import { pinoLogSink } from './log-pino-sink';

export type { LogFormat, LogLevel, LogRecord, LogSink } from './log-record';
export { formatLogLine } from './log-pino-sink';

/** Celery's lines on stderr; pino is loaded with the first one. */
const consoleSink: LogSink = pinoLogSink({ format: 'text', colour: process.stderr.isTTY && !process.env['NO_COLOR'] });

/** The worker's logger: Celery's levels, and a sink that writes them (by default Celery's lines on stderr, coloured on a TTY). */
export class Logger {
  readonly name: string;
  level: LogLevel;
  /** Context every record of this logger carries (see `with`). */
  readonly fields: Readonly<Record<string, unknown>> | undefined;
  readonly #sink: LogSink;

  constructor(name: string, options: { level?: LogLevel; sink?: LogSink; fields?: Readonly<Record<string, unknown>> } = {}) {
    this.name = name;
    this.level = options.level ?? 'info';
    this.#sink = options.sink ?? consoleSink;
    this.fields = options.fields;
  }

  /** True when the sink writes structured records (so building fields per record is worth it). */
  get structured(): boolean {
    return (this.#sink as { structured?: boolean }).structured === true;
  }

  child(name: string): Logger {
    return new Logger(name, { level: this.level, sink: this.#sink, ...(this.fields ? { fields: this.fields } : {}) });
  }

  /** The same logger with more context on every record (e.g. the task id a task's `ctx.log` lines carry). */
  with(fields: Readonly<Record<string, unknown>>): Logger {
    return new Logger(this.name, { level: this.level, sink: this.#sink, fields: this.fields ? { ...this.fields, ...fields } : fields });
  }

  enabled(level: LogLevel): boolean {
    return LOG_LEVELS[level] >= LOG_LEVELS[this.level];
  }

  debug(message: string): void {
    this.log('debug', message);
  }

  info(message: string): void {
    this.log('info', message);
  }

  warning(message: string): void {
    this.log('warning', message);
  }

  error(message: string): void {
    this.log('error', message);
  }

  critical(message: string): void {
    this.log('critical', message);
  }

  log(level: LogLevel, message: string, fields?: Readonly<Record<string, unknown>>): void {
    if (!this.enabled(level)) return;
    const merged = fields && this.fields ? { ...this.fields, ...fields } : (fields ?? this.fields);
    this.#sink(merged ? { level, logger: this.name, message, time: new Date(), fields: merged } : { level, logger: this.name, message, time: new Date() });
  }
}

export function parseLogLevel(value: string | undefined): LogLevel {
  const level = (value ?? 'info').toLowerCase();
  if (level === 'warn') return 'warning';
  if (level === 'fatal') return 'critical';
  if (level in LOG_LEVELS) return level as LogLevel;
  throw new Error(`Unknown log level ${JSON.stringify(value)}: use debug, info, warning, error or critical.`);
}
