import { styleText } from 'node:util';
import type Pino from 'pino';
import { lazyRequire } from '../platform/lazy-require';
import { PINO_LEVELS, type LogFormat, type LogLevel, type LogRecord, type LogSink } from './log-record';
import { activeTraceIds } from '../telemetry/task-tracing';

/** pino, loaded with the first sink that needs it (see lazy-require.ts). */
const loadPino = lazyRequire<typeof Pino>('pino');

const FROM_PINO = Object.fromEntries(Object.entries(PINO_LEVELS).map(([ours, theirs]) => [theirs, ours])) as Record<(typeof PINO_LEVELS)[LogLevel], LogLevel>;

/** The caller decided (a TTY, no NO_COLOR): Node would otherwise check stdout, not the stream the line goes to. */
const COLOUR_DECIDED = { validateStream: false } as const;

type Colour = Parameters<typeof styleText>[0];
const COLOURS: Readonly<Record<LogLevel, Colour>> = { debug: 'blue', info: 'green', warning: 'yellow', error: 'red', critical: 'magenta' };

/** A record as Celery prints it: `[2026-01-01 10:00:00.000: INFO/name] message` (with the level coloured). */
export function formatLogLine(record: LogRecord, colour = false): string {
  const level = record.level.toUpperCase();
  return `[${record.time.toISOString().replace('T', ' ').slice(0, 23)}: ${colour ? styleText(COLOURS[record.level], level, COLOUR_DECIDED) : level}/${record.logger}] ${record.message}`;
}

/** What pino writes for one record of the text format; read back as it writes the line. */
interface TextEntry {
  readonly level: (typeof PINO_LEVELS)[LogLevel];
  readonly logger: string;
  readonly time: number;
  readonly message: string;
}

export interface PinoLogSinkOptions {
  /** `text`: Celery's lines; `json`: one JSON object per line with the record's fields and trace ids. */
  format: LogFormat;
  /** A file to append to (its folder created); stderr when absent. */
  destination?: string;
  /** Colour the level of text lines. */
  colour?: boolean;
}

type PinoStream = Pino.DestinationStream & { flush?: () => void; end?: () => void; once?: (event: string, listener: () => void) => void };

/**
 * The worker's log sink, written by pino (the ecosystem's fast logger) in either format: the same logger, levels and
 * destinations, another line. `json` writes `time` (ISO), `level`, `logger` (the worker's node name, or the task's
 * name for `ctx.log`), `message`, the record's fields (`task_id`, `task_name`, …) and, while a traced task runs,
 * `trace_id` and `span_id`. `text` writes Celery's lines: pino's entry turned into the line by its streamWrite hook,
 * and pino is loaded with the first record, so a worker that logs nothing never loads it.
 */
export function pinoLogSink(options: PinoLogSinkOptions): LogSink & { close(): Promise<void> } {
  const json = options.format === 'json';
  const colour = options.colour === true;
  const open = (): { logger: Pino.Logger; stream: PinoStream } => {
    const pino = loadPino();
    const stream: PinoStream = options.destination
      ? pino.destination({ dest: options.destination, append: true, mkdir: true, sync: true })
      : pino.destination({ fd: 2, sync: true });
    const shared = { level: 'debug', base: null, messageKey: 'message', formatters: { level: (label: string) => ({ level: label }) } };
    const logger = json
      ? pino({ ...shared, timestamp: pino.stdTimeFunctions.isoTime }, stream)
      : pino(
          {
            ...shared,
            timestamp: false,
            hooks: {
              streamWrite: (line: string): string => {
                const entry = JSON.parse(line) as TextEntry;
                return `${formatLogLine({ level: FROM_PINO[entry.level], logger: entry.logger, message: entry.message, time: new Date(entry.time) }, colour)}\n`;
              },
            },
          },
          stream,
        );
    return { logger, stream };
  };
  // JSON was asked for on purpose: load pino now, so a missing one fails at start rather than at the first line.
  let writer = json ? open() : undefined;
  const sink = json
    ? (record: LogRecord): void => {
        writer ??= open();
        writer.logger[PINO_LEVELS[record.level]]({ logger: record.logger, ...record.fields, ...activeTraceIds() }, record.message);
      }
    : (record: LogRecord): void => {
        writer ??= open();
        writer.logger[PINO_LEVELS[record.level]]({ logger: record.logger, time: record.time.getTime() }, record.message);
      };
  return Object.assign(sink, {
    ...(json ? { structured: true as const } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        const stream = writer?.stream;
        // stderr stays open for whatever the process writes next.
        if (!stream || (!json && !options.destination)) return resolve();
        stream.flush?.();
        stream.end?.();
        stream.once?.('close', () => resolve());
        setTimeout(resolve, 500).unref();
      }),
  });
}
