/**
 * kq demo: a worker and a producer in one process.
 *
 *   pnpm demo                                                   # embedded memory:// broker and results
 *   pnpm demo --broker redis://127.0.0.1:6379/0                 # results in Redis too
 *   pnpm demo --broker amqp://guest:guest@127.0.0.1:5672 --backend rpc://
 *   pnpm demo --broker postgresql://postgres@127.0.0.1:5432/test  # results in PostgreSQL too
 */
import { parseArgs } from 'node:util';
import { sanitizeUrl } from '@kq/core';
import { TaskFailedError } from '@kq/worker';
import { add, app, divide, flaky, resize } from './tasks';

// `pnpm demo --broker …` reaches here as `-- --broker …` (pnpm passes its separator on): drop it.
const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({ args: argv, options: { broker: { type: 'string' }, backend: { type: 'string' } } });
if (values.broker) {
  app.conf.broker = values.broker;
  // Results where the broker can keep them: the same Redis or PostgreSQL, else RabbitMQ's rpc:// replies.
  app.conf.backend = values.backend ?? (/^(redis|postgres)/.test(values.broker) ? values.broker : 'rpc://');
} else if (values.backend) app.conf.backend = values.backend;
app.conf.taskDefaultQueue = `quickstart-${process.pid}`;

async function main(): Promise<void> {
  const worker = app.worker({ concurrency: 4, hostname: 'demo@%h', loglevel: 'critical' });
  await worker.start();
  console.log(`Worker ${worker.hostname} consuming "${app.conf.taskDefaultQueue}" on ${sanitizeUrl(app.conf.broker)}, results in ${sanitizeUrl(app.conf.backend ?? 'none')}\n`);

  const sum = await add.delay(2, 3);
  console.log(`add(2, 3)              -> ${await sum.get({ timeout: 10_000 })}`);

  const images = await Promise.all(['a.png', 'b.png', 'c.png'].map((path, i) => resize.delay(path, 100 * (i + 1))));
  for (const image of images) console.log(`resize(...)            -> ${JSON.stringify(await image.get({ timeout: 10_000 }))}`);

  const later = await add.applyAsync([40, 2], { countdown: 0.5 });
  console.log(`add(40, 2) in 0.5 s    -> ${await later.get({ timeout: 10_000 })}`);

  console.log(`flaky() with retries   -> ${await (await flaky.delay()).get({ timeout: 10_000 })}`);

  const failing = await divide.delay(1, 0);
  try {
    await failing.get({ timeout: 10_000 });
  } catch (error) {
    if (!(error instanceof TaskFailedError)) throw error;
    console.log(`divide(1, 0)           -> ${await failing.state()}: RangeError, stored as Python's ${error.excType}('${String(error.excMessage[0])}')`);
  }

  console.log(`\nPing over the mailbox  -> ${JSON.stringify(await app.control.ping({ timeout: 500 }))}`);
  await worker.stop();
  await app.close();
}

main().catch(async (error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
  await app.close().catch(() => undefined);
});
