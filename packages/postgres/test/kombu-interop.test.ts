/**
 * Kombu's SQLAlchemy transport (Python, python3-sqlalchemy + psycopg2) and kq's PostgreSQL store on one set of
 * tables: whoever comes first creates them, the other finds them; messages cross both ways in Kombu's envelope.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Exchange, Queue, type Delivery } from '@kq/core';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, dropTables, makeTransport, rawClient, uniqueTables } from './postgres-test-env';

const run = promisify(execFile);
const ready = (await brokerReachable('postgres')) && (await pythonAvailable(['kombu', 'sqlalchemy', 'psycopg2']));

/** Runs Kombu in Python against these tables; `body` is a script using `conn` (a kombu Connection). */
async function kombu(tables: { queueTable: string; messageTable: string }, body: string): Promise<string> {
  const script = [
    'import json, sys',
    'from kombu import Connection, Queue',
    `conn = Connection(${JSON.stringify(POSTGRES_URL.replace(/^postgres(ql)?:/, 'sqla+postgresql:'))},`,
    `    transport_options={"queue_tablename": ${JSON.stringify(tables.queueTable)}, "message_tablename": ${JSON.stringify(tables.messageTable)}})`,
    body,
  ].join('\n');
  const { stdout } = await run(pythonInterpreter, ['-c', script], { timeout: 30_000 });
  return stdout.trim();
}

describe.skipIf(!ready)('Kombu SQLAlchemy transport and kq on shared tables', () => {
  const made: Array<{ queueTable: string; messageTable: string }> = [];
  afterAll(async () => {
    const client = rawClient();
    for (const tables of made) await dropTables(client, tables);
    await client.end();
  });

  it('Python creates the tables and publishes; kq migrates on top and consumes the message', async () => {
    const tables = uniqueTables('kombu_first');
    made.push(tables);
    await kombu(tables, 'conn.SimpleQueue("from_py").put({"hello": "kq"}, serializer="json")\nconn.release()');
    const transport = makeTransport(tables);
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
    const tables = uniqueTables('kq_first');
    made.push(tables);
    const transport = makeTransport(tables);
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
      tables,
      'q = conn.SimpleQueue("from_kq")\nm = q.get(timeout=10)\nprint(json.dumps(m.payload))\nm.ack()\nconn.release()',
    );
    expect(JSON.parse(out)).toEqual({ hello: 'python' });
  });
});
