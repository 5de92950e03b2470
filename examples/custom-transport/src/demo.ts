// Five messages through a directory queue, no broker: node --import tsx examples/custom-transport/src/demo.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Connection, Consumer, Producer, Queue, registerTransport } from '@kq/core';
import { createTransport } from './index';

registerTransport('file', createTransport);

const root = await mkdtemp(join(tmpdir(), 'kq-demo-'));
const connection = new Connection(`${pathToFileURL(root).href}?visibilityTimeoutMs=30000`);
const tasks = new Queue('tasks');

const producer = new Producer(connection, { routingKey: 'tasks' });
for (let n = 1; n <= 5; n++) await producer.publish({ n }, { declare: [tasks] });

let done = 0;
const consumer = new Consumer(connection, {
  queues: [tasks],
  prefetch: 2,
  onMessage: async (body, delivery) => {
    console.log('got', body, 'from', delivery.deliveryInfo.queue);
    await delivery.ack();
    done++;
  },
});
await consumer.consume();
while (done < 5) await new Promise((resolve) => setTimeout(resolve, 20));

await consumer.cancel();
await connection.close();
await rm(root, { recursive: true, force: true });
