import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { formatLogLine, type LogSink } from './logger';

/** A log sink that appends Celery-style lines to a file (`kq worker --logfile`), creating its folder. */
export function fileLogSink(path: string): LogSink & { close(): Promise<void> } {
  mkdirSync(dirname(path), { recursive: true });
  const stream = createWriteStream(path, { flags: 'a' });
  const sink = (record: Parameters<LogSink>[0]): void => {
    stream.write(`${formatLogLine(record)}\n`);
  };
  return Object.assign(sink, {
    close: () => new Promise<void>((resolve) => stream.end(() => resolve())),
  });
}
