import { App } from '@kq/worker';

/** The demo app. Point `broker`/`backend` at Redis or RabbitMQ and Python Celery workers can run these too. */
export const app = new App('quickstart', {
  broker: process.env['KQ_BROKER_URL'] ?? 'memory://',
  backend: process.env['KQ_RESULT_BACKEND'] ?? 'memory://',
});

export const add = app.task('quickstart.add', (_ctx, x: number, y: number) => x + y);

export const resize = app.task('quickstart.resize', async (ctx, path: string, width: number) => {
  ctx.log.info(`resizing ${path} to ${width}px`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { path, width, bytes: width * 97 };
});

let flakyCalls = 0;
export const flaky = app.task(
  'quickstart.flaky',
  async (ctx) => {
    flakyCalls++;
    if (flakyCalls < 3) return ctx.retry({ countdown: 0.2, exc: new Error(`attempt ${flakyCalls} failed`) });
    return `succeeded after ${ctx.request.retries} retries`;
  },
  { maxRetries: 5 },
);

export const divide = app.task('quickstart.divide', (_ctx, x: number, y: number) => {
  if (y === 0) throw new RangeError('division by zero');
  return x / y;
});
