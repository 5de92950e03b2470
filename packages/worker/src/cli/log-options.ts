import { InvalidArgumentError } from 'commander';
import { parseLogLevel, type LogLevel } from '../log/logger';

/** `-l/--loglevel` for commander: Celery's level names (and `warn`, `fatal`), any case. */
export function parseLogLevelOption(value: string): LogLevel {
  try {
    return parseLogLevel(value);
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
  }
}
