import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Channel, Delivery, OutgoingMessage } from '@kq/core';
import { brokerUrls } from '@kq/test-harness';
import { AmqpTransport, type AmqpTransportOptions } from '../src/index';

export const AMQP_URL = brokerUrls.amqp;

/** A name prefix unique to one test file and run, so parallel files and reruns never share an entity. */
export function namer(file: string): (suffix: string) => string {
  const run = `${process.pid}.${randomBytes(3).toString('hex')}`;
  return (suffix) => `kqt.${file}.${run}.${suffix}`;
}

export function newTransport(options: AmqpTransportOptions = {}): AmqpTransport {
  return new AmqpTransport(AMQP_URL, { connectTimeout: 5000, ...options });
}

export function message(body: string | Buffer, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    body: typeof body === 'string' ? Buffer.from(body) : body,
    contentType: 'text/plain',
    contentEncoding: 'utf-8',
    headers: {},
    properties: { deliveryMode: 2 },
    ...extra,
  };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Consumes `queue` into an array, acking each delivery unless told not to. */
export async function collect(
  channel: Channel,
  queue: string | string[],
  options: { ack?: boolean; prefetch?: number } = {},
): Promise<{ deliveries: Delivery[]; cancel: () => Promise<void> }> {
  const deliveries: Delivery[] = [];
  const handle = await channel.consume({
    queues: Array.isArray(queue) ? queue : [queue],
    prefetch: options.prefetch ?? 0,
    onMessage: (delivery) => {
      deliveries.push(delivery);
      if (options.ack ?? true) void delivery.ack().catch(() => undefined);
    },
  });
  return { deliveries, cancel: () => handle.cancel() };
}

const execFileAsync = promisify(execFile);

/** Runs rabbitmqctl; undefined when it is not installed or not allowed (then broker-side tests are skipped). */
export async function rabbitmqctl(...args: string[]): Promise<string | undefined> {
  try {
    const { stdout } = await execFileAsync('rabbitmqctl', ['-q', ...args], { timeout: 30_000 });
    return stdout;
  } catch {
    return undefined;
  }
}

/** The broker's connection pids whose client_properties carry `connectionName` (set with the transport option). */
export async function connectionPids(connectionName: string): Promise<string[]> {
  const listing = await rabbitmqctl('list_connections', 'pid', 'client_properties');
  if (listing === undefined) throw new Error('rabbitmqctl is not available');
  return listing
    .split('\n')
    .filter((line) => line.includes(`"${connectionName}"`))
    .map((line) => line.split('\t')[0]?.trim() ?? '')
    .filter((pid) => pid !== '');
}

/** Closes connections from the broker side (`rabbitmqctl close_connection`). */
export async function closeConnections(pids: readonly string[], reason = 'kq recovery test'): Promise<number> {
  let closed = 0;
  for (const pid of pids) if ((await rabbitmqctl('close_connection', pid, reason)) !== undefined) closed++;
  return closed;
}

/** Closes, from the broker side, every connection whose client_properties carry `connectionName`. */
export async function closeConnectionsNamed(connectionName: string, reason = 'kq recovery test'): Promise<number> {
  return closeConnections(await connectionPids(connectionName), reason);
}
