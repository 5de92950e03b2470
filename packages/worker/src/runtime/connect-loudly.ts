import { sanitizeUrl, type Connection } from '@kq/core';
import type { Logger } from '../log/logger';

/**
 * Connects to the broker, logging every failed attempt as one line, as Celery words it, so an unreachable broker is
 * never a silent hang.
 */
export async function connectLoudly(connection: Connection, brokerUrl: string, log: Logger): Promise<void> {
  const onRetrying = (reason: Error, attempt: number, delayMs: number, maxRetries: number | undefined): void => {
    log.error(`Cannot connect to ${sanitizeUrl(brokerUrl)}: ${reason.message}. Trying again in ${(delayMs / 1000).toFixed(2)} seconds... (${attempt}/${maxRetries ?? '∞'})`);
  };
  connection.on('retrying', onRetrying);
  try {
    await connection.connect();
  } finally {
    connection.off('retrying', onRetrying);
  }
}
