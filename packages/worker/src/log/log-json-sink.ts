import type { LogSink } from './log-record';
import { pinoLogSink } from './log-pino-sink';

/** `--log-format json`: one JSON object per line, written by pino (see log-pino-sink.ts). To stderr, or appended to `destination`. */
export function jsonLogSink(options: { destination?: string } = {}): LogSink & { close(): Promise<void> } {
  return pinoLogSink({ format: 'json', ...options });
}
