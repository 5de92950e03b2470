import type { LogSink } from './log-record';
import { pinoLogSink } from './log-pino-sink';

/** A log sink that appends Celery-style lines to a file (`kq worker --logfile`), creating its folder. */
export function fileLogSink(path: string): LogSink & { close(): Promise<void> } {
  return pinoLogSink({ format: 'text', destination: path });
}
