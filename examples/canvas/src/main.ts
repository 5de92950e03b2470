/**
 * A tour of kq's canvas, worker and client in one process; it exits when done.
 *
 *   pnpm --filter @kq/example-canvas start                                   # memory:// broker and results
 *   pnpm --filter @kq/example-canvas start -- --broker redis://127.0.0.1:6379/0
 *   pnpm --filter @kq/example-canvas start -- --broker amqp://guest:guest@127.0.0.1:5672 --backend redis://127.0.0.1:6379/0
 */
import { parseArgs } from 'node:util';
import { App, TaskFailedError, chain, chord, group } from '@kq/worker';

const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({ args: argv, options: { broker: { type: 'string' }, backend: { type: 'string' } } });
const broker = values.broker ?? 'memory://canvas-tour';
// Chords need a backend that can join them: memory and Redis join natively; rpc:// cannot hold them.
const backend = values.backend ?? (broker.startsWith('redis') ? broker : 'memory://canvas-tour');

export const app = new App('tour', { broker, backend, taskDefaultQueue: `canvas-tour-${process.pid}` });

const add = app.task('tour.add', (_ctx, x: number, y: number) => x + y);
const mul = app.task('tour.mul', (_ctx, x: number, y: number) => x * y);
const total = app.task('tour.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
const divide = app.task('tour.divide', (_ctx, x: number, y: number) => {
  if (y === 0) throw new RangeError('division by zero');
  return x / y;
});
// A task that hands its work on: the chain runs in its place, under its id.
const addThenDouble = app.task('tour.add_then_double', (ctx, x: number) => ctx.replace(chain(add.s(x, 1), mul.s(2))));

async function main(): Promise<void> {
  const worker = app.worker({ concurrency: 8, loglevel: (process.env['KQ_TOUR_LOG'] ?? 'critical') as 'critical' });
  await worker.start();

  // chain: each step gets the previous result first — ((2 + 2) + 4) * 10
  const chained = await chain(add.s(2, 2), add.s(4), mul.s(10)).delay();
  console.log(`chain(add(2, 2), add(4), mul(10))         -> ${await chained.get({ timeout: 10_000 })}`);

  // group: in parallel, results in order
  const grouped = await group([add.s(1, 1), add.s(2, 2), add.s(3, 3)]).delay();
  console.log(`group(add(1, 1), add(2, 2), add(3, 3))    -> ${JSON.stringify(await grouped.join({ timeout: 10_000 }))}`);

  // chord: the body runs once, with every header result
  const chorded = await chord([0, 1, 2, 3, 4].map((i) => add.s(i, i)), total.s()).delay();
  console.log(`chord([add(i, i) for i < 5], total)       -> ${await chorded.get({ timeout: 10_000 })}`);

  // a group followed by a task inside a chain is a chord, as in Celery
  const upgraded = await chain(add.s(1, 1), group([add.s(10), add.s(20)]), total.s()).delay();
  console.log(`chain(add(1, 1), group(add(10), add(20)), total) -> ${await upgraded.get({ timeout: 10_000 })}`);

  // chunks: 6 calls as 3 messages of 2
  const chunked = await add.chunks([[1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6]], 2).delay();
  console.log(`add.chunks(6 calls, 2)                    -> ${JSON.stringify(await chunked.join({ timeout: 10_000 }))}`);

  // replace: the task's result is the replacement's
  console.log(`add_then_double(4) (replaced by a chain)  -> ${await (await addThenDouble.delay(4)).get({ timeout: 10_000 })}`);

  // a failed header task fails the chord's body with ChordError
  const failed = await chord([add.s(1, 1), divide.s(1, 0)], total.s()).delay();
  try {
    await failed.get({ timeout: 10_000 });
  } catch (error) {
    if (!(error instanceof TaskFailedError)) throw error;
    console.log(`chord([add(1, 1), divide(1, 0)], total)   -> ${error.excType}: ${String(error.excMessage[0])}`);
  }

  await worker.stop();
  await app.close();
}

main().catch(async (error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
  await app.close().catch(() => undefined);
});
