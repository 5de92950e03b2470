import { KqError } from '@kq/core';
import { App } from '../app/app';
import { loadAppModule } from '../app/load-app-module';

/**
 * Loads the app a CLI command works on: the module given with `-A` (its `app` export or default export must be
 * an `App`; TypeScript loads through tsx), or a bare app built from `--broker` / `--result-backend` (or
 * KQ_BROKER_URL / KQ_RESULT_BACKEND).
 */
export async function loadApp(options: {
  app?: string;
  broker?: string;
  resultBackend?: string;
  /** Try the broker once and fail with the reason (one-shot commands); a worker keeps retrying. */
  oneShot?: boolean;
  /** Refuse the implicit memory:// (default true): commands that never reach the broker (`report`, `shell`) pass false. */
  requireBroker?: boolean;
}): Promise<App> {
  const app = options.app ? await loadAppModule(options.app) : new App('kq');
  const broker = options.broker ?? process.env['KQ_BROKER_URL'] ?? process.env['CELERY_BROKER_URL'];
  const backend = options.resultBackend ?? process.env['KQ_RESULT_BACKEND'] ?? process.env['CELERY_RESULT_BACKEND'];
  if (broker) app.conf.broker = broker;
  else if (options.requireBroker !== false && app.conf.broker.startsWith('memory://')) {
    // The embedded broker lives in one process: a task sent to it from a command is lost when the command exits,
    // and a worker on it can only ever see its own process's tasks.
    throw new KqError(
      'No broker is configured: pass -b redis://127.0.0.1:6379/0 (or amqp://…, postgresql://…), set KQ_BROKER_URL, or ' +
        "load an app with -A whose broker is set. (memory:// lives inside one process; pass -b memory:// to use it anyway.)",
    );
  }
  if (backend) app.conf.backend = backend;
  // One-shot commands try the broker once and say why it failed (as `celery call`); `kq worker` keeps retrying.
  if (options.oneShot) app.conf.brokerConnectionMaxRetries = 0;
  return app;
}
