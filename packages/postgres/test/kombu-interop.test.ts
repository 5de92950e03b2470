/**
 * Kombu's SQLAlchemy transport (Python, python3-sqlalchemy + psycopg2) and kq's PostgreSQL store on one set of
 * tables: whoever comes first creates them, the other finds them; messages cross both ways in Kombu's envelope.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Exchange, Queue, type Delivery } from '@kq/core';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresTransport } from '../src/index';
import { withSchema } from './postgres-test-env';

const run = promisify(execFile);
const ready = (await brokerReachable('postgres')) && (await pythonAvailable(['kombu', 'sqlalchemy', 'psycopg2']));

/** Runs Kombu in Python on the schema of `url`; `body` is a script using `conn` (a kombu Connection). */
async function kombu(url: string, body: string): Promise<string> {
  const script = [
    'import json, sys',
    'from kombu import Connection, Queue',
    `conn = Connection(${JSON.stringify(url.replace(/^postgres(ql)?:/, 'sqla+postgresql:'))})`,
    body,
  ].join('\n');
  const { stdout } = await run(pythonInterpreter, ['-c', script], { timeout: 30_000 });
  return stdout.trim();
}

describe.skipIf(!ready)('Kombu SQLAlchemy transport and kq on shared tables', () => {
  const schemas: Array<{ drop(): Promise<void> }> = [];
  afterAll(async () => {
    for (const schema of schemas) await schema.drop();
  });
  const transportOn = (url: string): PostgresTransport => new PostgresTransport(url, { logger: { warn: () => undefined } });

  it('Python creates the tables and publishes; kq migrates on top and consumes the message', async () => {
    const schema = await withSchema('kombu_first');
    schemas.push(schema);
    await kombu(schema.url, 'conn.SimpleQueue("from_py").put({"hello": "kq"}, serializer="json")\nconn.release()');
    const transport = transportOn(schema.url);
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue('from_py'));
      const delivery = await channel.get('from_py');
      expect(delivery).not.toBeNull();
      expect(JSON.parse((delivery as Delivery).body.toString())).toEqual({ hello: 'kq' });
      await (delivery as Delivery).ack();
      expect(await channel.get('from_py')).toBeNull();
    } finally {
      await transport.close();
    }
  });

  it('kq creates the tables and publishes; Python consumes the message and finds no kq bookkeeping in it', async () => {
    const schema = await withSchema('kq_first');
    schemas.push(schema);
    const transport = transportOn(schema.url);
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue('from_kq'));
      await channel.publish(Exchange.DEFAULT.name, 'from_kq', {
        body: Buffer.from(JSON.stringify({ hello: 'python' })),
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: {},
        properties: { priority: 0, deliveryMode: 2 },
      });
    } finally {
      await transport.close();
    }
    const out = await kombu(
      schema.url,
      'q = conn.SimpleQueue("from_kq")\nm = q.get(timeout=10)\nprint(json.dumps(m.payload))\nm.ack()\nconn.release()',
    );
    expect(JSON.parse(out)).toEqual({ hello: 'python' });
  });
});
