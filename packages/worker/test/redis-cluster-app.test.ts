import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { chord, group } from '../src/canvas/index';
import { Logger } from '../src/log/logger';

// An application whose only Redis is a cluster (as a managed Redis in cluster mode is): tasks on its queues, results
// and the chord join in its result backend, on a 3-master cluster of this file's own. (Beat's lease on a cluster is
// checked in packages/redis/test/cluster-beat-lease.test.ts; its failover across a SIGKILL in beat-failover.test.ts.)
const cluster = await startRedisClusterOrSkip();

afterAll(async () => {
  await cluster?.destroy();
});

const quiet = (): Logger => new Logger('test', { level: 'error', sink: () => undefined });

describe.skipIf(!cluster)('an app on Redis Cluster, broker and result backend', () => {
  it('gets a task’s result, a group’s results and a chord’s callback', async () => {
    const app = new App('cluster-results', { broker: cluster!.url, backend: cluster!.url });
    const add = app.task('cr.add', (_ctx, x: number, y: number) => x + y);
    const total = app.task('cr.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
    const worker = app.worker({ hostname: 'cluster-results@test', concurrency: 4, logger: quiet() });
    await worker.start();
    try {
      expect(await (await add.delay(2, 3)).get({ timeout: 10_000 })).toBe(5);
      const parts = await group(Array.from({ length: 6 }, (_, index) => add.s(index, index))).delay();
      expect(await parts.get({ timeout: 10_000 })).toEqual([0, 2, 4, 6, 8, 10]);
      const joined = await chord(Array.from({ length: 5 }, (_, index) => add.s(index, 1)), total.s()).delay();
      expect(await joined.get({ timeout: 10_000 })).toBe(15);
    } finally {
      await worker.stop();
      await app.close();
    }
  });
});
