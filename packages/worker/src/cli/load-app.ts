import { App } from '../app';
import { loadAppModule } from '../pool/load-app-module';

/**
 * Loads the app a CLI command works on: the module given with `-A` (its `app` export or default export must be
 * an `App`; TypeScript loads through tsx), or a bare app built from `--broker` / `--result-backend` (or
 * KQ_BROKER_URL / KQ_RESULT_BACKEND).
 */
export async function loadApp(options: { app?: string; broker?: string; resultBackend?: string }): Promise<App> {
  const app = options.app ? await loadAppModule(options.app) : new App('kq');
  const broker = options.broker ?? process.env['KQ_BROKER_URL'] ?? process.env['CELERY_BROKER_URL'];
  const backend = options.resultBackend ?? process.env['KQ_RESULT_BACKEND'] ?? process.env['CELERY_RESULT_BACKEND'];
  if (broker) app.conf.broker = broker;
  if (backend) app.conf.backend = backend;
  return app;
}
