/**
 * kq transport tour: exchanges, routing, prefetch, ack and requeue on any broker.
 *
 *   pnpm --filter @kq/example-transport-tour start                                  # embedded memory:// broker
 *   pnpm --filter @kq/example-transport-tour start --broker redis://127.0.0.1:6379  # or amqp://guest:guest@127.0.0.1:5672
 */
import { parseArgs } from 'node:util';
import { Connection, Consumer, Exchange, Producer, Queue, type Delivery } from '@kq/core';

const { values } = parseArgs({ options: { broker: { type: 'string', default: 'memory://' } } });
const brokerUrl = values.broker ?? 'memory://';
const run = `kq-demo-${process.pid}`;

const say = (line: string): void => console.log(line);

async function main(): Promise<void> {
  const connection = new Connection(brokerUrl);
  connection.on('error', (error) => say(`  ! ${error.message}`));
  await connection.connect();
  const transport = await connection.transport();
  say(`Connected to ${brokerUrl} (${transport.name} transport)`);

  const orders = new Exchange(`${run}.orders`, { type: 'direct', durable: false });
  const logs = new Exchange(`${run}.logs`, { type: 'topic', durable: false });
  const broadcast = new Exchange(`${run}.broadcast`, { type: 'fanout', durable: false });
  const queues = [
    new Queue(`${run}.orders.eu`, { exchange: orders, routingKey: 'eu', durable: false, autoDelete: true }),
    new Queue(`${run}.logs.errors`, { exchange: logs, routingKey: '*.error', durable: false, autoDelete: true }),
    new Queue(`${run}.logs.all`, { exchange: logs, routingKey: '#', durable: false, autoDelete: true }),
    new Queue(`${run}.broadcast.a`, { exchange: broadcast, durable: false, autoDelete: true }),
    new Queue(`${run}.broadcast.b`, { exchange: broadcast, durable: false, autoDelete: true }),
  ];

  const received = new Map<string, string[]>();
  let rejectedOnce = false;
  let inFlight = 0;
  let maxInFlight = 0;
  const expected = 9;
  let total = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));

  const consumer = new Consumer(connection, {
    queues,
    prefetch: 2,
    onMessage: async (body, delivery: Delivery) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const queue = delivery.deliveryInfo.queue.slice(run.length + 1);
      const text = JSON.stringify(body);
      await new Promise((resolve) => setTimeout(resolve, 10)); // pretend to work
      inFlight--;
      if (!rejectedOnce && queue === 'orders.eu') {
        rejectedOnce = true;
        say(`  ${queue.padEnd(14)} <- ${text}  requeue (redelivered=${delivery.deliveryInfo.redelivered})`);
        await delivery.requeue();
        return;
      }
      say(`  ${queue.padEnd(14)} <- ${text}  ack${delivery.deliveryInfo.redelivered ? ' (redelivered)' : ''}`);
      await delivery.ack();
      received.set(queue, [...(received.get(queue) ?? []), text]);
      if (++total === expected) done();
    },
  });
  await consumer.consume();

  const producer = new Producer(connection);
  say('\nPublishing:');
  const publish = async (exchange: Exchange, routingKey: string, body: unknown): Promise<void> => {
    say(`  ${exchange.type.padEnd(6)} ${exchange.name.slice(run.length + 1)}/${routingKey || '(none)'} -> ${JSON.stringify(body)}`);
    await producer.publish(body, { exchange, routingKey, deliveryMode: 1 });
  };
  await publish(orders, 'eu', { order: 1, item: 'coffee' });
  await publish(orders, 'us', { order: 2, item: 'tea' }); // no queue bound for 'us': dropped, as on AMQP
  await publish(orders, 'eu', { order: 3, item: 'cake' });
  await publish(logs, 'db.error', { msg: 'disk full' });
  await publish(logs, 'web.info', { msg: 'hello' });
  await publish(logs, 'web.error', { msg: 'timeout' });
  await publish(broadcast, '', { notice: 'deploying v2' });

  say('\nConsuming (prefetch 2):');
  const timeout = setTimeout(() => done(), 10_000);
  await finished;
  clearTimeout(timeout);
  await consumer.cancel();

  say('\nWhat each queue got:');
  for (const queue of queues) {
    const name = queue.name.slice(run.length + 1);
    say(`  ${name.padEnd(14)} ${(received.get(name) ?? []).join(', ') || '(nothing)'}`);
  }
  say(`\nNever more than ${maxInFlight} message(s) in flight (prefetch 2); ${total}/${expected} delivered and acked.`);

  const channel = await connection.channel();
  for (const queue of queues) await channel.deleteQueue(queue.name).catch(() => undefined);
  for (const exchange of [orders, logs, broadcast]) await channel.deleteExchange(exchange.name).catch(() => undefined);
  await connection.close();
  if (total !== expected) {
    console.error(`Expected ${expected} deliveries, got ${total}.`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
