// A second OS process for the conformance suite: makes a transport with the module the suite names, consumes one
// queue holding every delivery (never settling), and reports each on stdout, until the suite kills it.
// argv: <module> <queue> <prefetch>. Lines: `ready`, then `held <body>` per delivery.
import { pathToFileURL } from 'node:url';
import type { Transport } from '@kq/core';

const [modulePath, queue, prefetch] = process.argv.slice(2);
if (!modulePath || !queue) {
  console.error('usage: peer-process <module> <queue> [prefetch]');
  process.exit(2);
}
const module = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
const create = (module['createTransport'] ?? module['default']) as (() => Transport | Promise<Transport>) | undefined;
if (typeof create !== 'function') {
  console.error(`${modulePath} must export createTransport() (or a default function) that makes a transport`);
  process.exit(2);
}
const transport = await create();
transport.on('error', () => undefined);
await transport.connect();
const channel = await transport.createChannel();
await channel.consume({
  queues: [queue],
  prefetch: Number(prefetch ?? 1),
  onMessage: (delivery) => process.stdout.write(`held ${delivery.body.toString('utf8')}\n`),
});
process.stdout.write('ready\n');
