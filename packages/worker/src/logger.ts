export type LogLevel = 'debug' | 'info' | 'warning' | 'error' | 'critical';

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 };
const COLOURS: Record<LogLevel, string> = { debug: '\x1b[34m', info: '\x1b[32m', warning: '\x1b[33m', error: '\x1b[31m', critical: '\x1b[35m' };

export interface LogRecord {
  level: LogLevel;
  logger: string;
  message: string;
  time: Date;
  /** Structured context (task id and name, ...): the JSON format writes them as fields; the text format omits them. */
  fields?: Readonly<Record<string, unknown>>;
}

/** Where records go. A sink with `structured: true` writes fields (JSON); others write Celery's text lines. */
export type LogSink = ((record: LogRecord) => void) & { readonly structured?: boolean };

/** `text` (Celery's lines, the default) or `json` (one JSON object per line, on pino). */
export type LogFormat = 'text' | 'json';

/** The worker's logger: Celery-like lines (`[time: LEVEL/name] message`), colour on a TTY, pluggable sink. */
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
    return LEVELS[level] >= LEVELS[this.level];
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
  if (level in LEVELS) return level as LogLevel;
  throw new Error(`Unknown log level ${JSON.stringify(value)}: use debug, info, warning, error or critical.`);
}

/** A record as Celery prints it: `[2026-01-01 10:00:00.000: INFO/name] message` (with the level coloured). */
export function formatLogLine(record: LogRecord, colour = false): string {
  const level = record.level.toUpperCase();
  return `[${record.time.toISOString().replace('T', ' ').slice(0, 23)}: ${colour ? COLOURS[record.level] + level + '\x1b[0m' : level}/${record.logger}] ${record.message}`;
}

const consoleSink: LogSink = (record) => {
  process.stderr.write(`${formatLogLine(record, process.stderr.isTTY && !process.env['NO_COLOR'])}\n`);
};
