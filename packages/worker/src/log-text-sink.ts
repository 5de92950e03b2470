import { styleText } from 'node:util';
import type Pino from 'pino';
import { lazyRequire } from './lazy-require';
import { PINO_LEVELS, type LogLevel, type LogRecord, type LogSink } from './log-record';

/** pino, loaded with the first text sink that writes (see lazy-require.ts). */
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

/** What pino writes for one record of the text sink; read back as it writes the line. */
interface TextEntry {
  readonly level: (typeof PINO_LEVELS)[LogLevel];
  readonly logger: string;
  readonly time: number;
  readonly message: string;
}

/**
 * Celery's text lines (`[time: LEVEL/name] message`), written by pino like the JSON format (see log-json-sink.ts):
 * the same logger and destinations, another line format. To stderr, colouring the level when `colour`, or appended
 * to `destination` (its folder created). pino is loaded with the first record, so a worker that logs nothing never
 * loads it.
 */
export function textLogSink(options: { destination?: string; colour?: boolean } = {}): LogSink & { close(): Promise<void> } {
  let writer: { logger: Pino.Logger; stream: Pino.DestinationStream & { flush?: () => void; end?: () => void; once?: (event: string, listener: () => void) => void } } | undefined;
  const open = (): NonNullable<typeof writer> => {
    const pino = loadPino();
    const stream = options.destination
      ? pino.destination({ dest: options.destination, append: true, mkdir: true, sync: true })
      : pino.destination({ fd: 2, sync: true });
    const colour = options.colour === true;
    const logger = pino(
      {
        level: 'debug',
        base: null,
        timestamp: false,
        messageKey: 'message',
        formatters: { level: (label) => ({ level: label }) },
        // pino writes JSON; the human format is the same entry as Celery's line.
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
  const sink = (record: LogRecord): void => {
    writer ??= open();
    writer.logger[PINO_LEVELS[record.level]]({ logger: record.logger, time: record.time.getTime() }, record.message);
  };
  return Object.assign(sink, {
    close: () =>
      new Promise<void>((resolve) => {
        const stream = writer?.stream;
        if (!stream || !options.destination) return resolve();
        stream.flush?.();
        stream.end?.();
        stream.once?.('close', () => resolve());
        setTimeout(resolve, 500).unref();
      }),
  });
}
