import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Logger, type LogRecord } from '../src/log/logger';
// The Redis package's private server launcher (its own port and data), imported by path as a test helper.
import { PrivateRedis } from '../../redis/test/helpers/private-redis';

// A worker told to stop while its broker is down used to wait for the broker without end: an idle consumer's BRPOP
// sat in ioredis's offline queue (a disconnect does not fail what is queued while reconnecting), and the control
// node, events and channel each waited for the broker too. It now stops, and says why.
const hasServer = await new Promise<boolean>((resolve) => execFile('redis-server', ['--version'], (error) => resolve(!error)));
if (!hasServer && process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error('redis-server is not installed; this test starts its own');

describe.skipIf(!hasServer)('a worker told to stop while its broker is down', () => {
  it('stops without the broker, saying why, and is whole again once the broker is back', async () => {
    const redis = new PrivateRedis();
    await redis.start();
    const records: LogRecord[] = [];
    const app = new App('stop-broker-down', { broker: redis.url });
    app.task('sbd.noop', () => 1);
    const worker = app.worker({
      hostname: 'stop-broker-down@test',
      concurrency: 2,
      logger: new Logger('test', { level: 'warning', sink: (record) => void records.push(record) }),
    });
    try {
      await worker.start();
      await redis.kill();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the consumer is waiting on a connection that is gone
      await worker.stop();
      expect(records.map((record) => record.message).join('\n')).toContain('Could not finish with the broker within');
    } finally {
      await redis.start();
      await app.close();
      await redis.stop();
    }
  }, 60_000);
});
