/** Celery's level names, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warning' | 'error' | 'critical';

export const LOG_LEVELS: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 };

/** pino's name for each level. */
export const PINO_LEVELS: Readonly<Record<LogLevel, 'debug' | 'info' | 'warn' | 'error' | 'fatal'>> = {
  debug: 'debug',
  info: 'info',
  warning: 'warn',
  error: 'error',
  critical: 'fatal',
};

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

/** `text` (Celery's lines, the default) or `json` (one JSON object per line); both written by pino. */
export type LogFormat = 'text' | 'json';
