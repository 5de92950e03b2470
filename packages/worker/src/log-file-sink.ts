import type { LogSink } from './log-record';
import { textLogSink } from './log-text-sink';

/** A log sink that appends Celery-style lines to a file (`kq worker --logfile`), creating its folder. */
export function fileLogSink(path: string): LogSink & { close(): Promise<void> } {
  return textLogSink({ destination: path });
}
