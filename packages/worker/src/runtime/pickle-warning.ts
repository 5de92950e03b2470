import { defaultSerializers } from '@kq/core';
import type { Logger } from '../log/logger';

/** Celery configs often accept pickle; kq cannot decode it, which start-up says once rather than each task failing. */
export function warnIfPickleAccepted(acceptContent: readonly string[], log: Logger): void {
  const pickle = acceptContent.find((entry) => entry === 'pickle' || entry === 'application/x-python-serialize');
  if (pickle === undefined || defaultSerializers.has('application/x-python-serialize')) return;
  log.warning(
    `acceptContent names ${JSON.stringify(pickle)}, but kq cannot decode pickle: pickled tasks will be rejected and ` +
      'their result stored as ContentDisallowed (kombu.exceptions). Have their senders use json, msgpack or yaml.',
  );
}
