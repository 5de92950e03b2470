/**
 * `inspect active`'s `delivery_info.redelivered` as Celery 5.5+ reports it when no Python worker says otherwise:
 * False on Redis, whose Kombu transport marks only the messages it restores (5.2.6 shows None there:
 * wire-samples/redis-5.2.6-inspect-control-replies.txt, and kq does with a 5.2 worker in the fleet), and the broker's
 * own boolean on RabbitMQ.
 */
import { randomUUID } from 'node:crypto';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { amqpCleanup, redisCleanup } from './fixtures/cluster/interop-suite';
import { recordingLogger, waitFor } from './fixtures/cluster/helpers';

const DB = 12;
const cases = [
  { kind: 'redis', url: `${brokerUrls.redis}/${DB}`, cleanup: redisCleanup(DB), redelivered: false },
  { kind: 'amqp', url: brokerUrls.amqp, cleanup: amqpCleanup, redelivered: false },
] as const;

for (const broker of cases) {
  const ready = await brokerReachable(broker.kind);
  describe.skipIf(!ready)(`inspect active on ${broker.kind}`, () => {
    it(`reports a first delivery's redelivered as ${String(broker.redelivered)}`, { timeout: 30_000 }, async () => {
      const ns = `kqrd${randomUUID().slice(0, 8)}`;
      const node = `kq@${ns}`;
      const config = { broker: broker.url, controlExchange: ns, eventExchange: `${ns}.ev`, taskDefaultQueue: `${ns}.kq` };
      const app = new App('redelivered', config);
      let release: (() => void) | undefined;
      app.task('redelivered.hold', () => new Promise<void>((resolve) => (release = resolve)));
      const worker = app.worker({ hostname: node, concurrency: 1, logger: recordingLogger(node).logger, steps: clusterSteps({ mingle: false, gossip: false }) });
      try {
        await worker.start();
        await app.sendTask('redelivered.hold', [], {}, { taskId: `${ns}-held` });
        await waitFor(() => worker.state.active.size === 1, 10_000, 'the task running');
        const replies = await app.control.broadcast('active', { reply: true, destination: [node], timeout: 3000 });
        const active = (replies[0] as Record<string, Array<{ delivery_info: Record<string, unknown> }>>)[node];
        expect(active?.[0]?.delivery_info).toEqual({ exchange: '', routing_key: `${ns}.kq`, priority: 0, redelivered: broker.redelivered });
      } finally {
        release?.();
        await worker.stop();
        await broker.cleanup(ns, app).catch(() => undefined);
        await app.close();
      }
    });
  });
}
