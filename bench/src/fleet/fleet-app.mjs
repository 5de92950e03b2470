// The app every fleet worker runs: one task, no result backend. Plain JavaScript so each worker process starts on
// the built packages with no tsx (a lean start: a fleet of 200 is mostly start-up cost otherwise).
import { App } from '@kq/worker';

export const app = new App('fleet', { broker: process.env['KQ_BROKER_URL'] ?? 'memory://' });

app.task('fleet.noop', () => null);
