/**
 * Issue 6's interop proof: the pidbox Mailbox speaks Kombu's wire format on Redis (PUB/SUB) and RabbitMQ (fanout):
 * Python's `celery inspect ping` reaches a kq node, and a kq broadcast collects a real Python worker's reply.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Connection, Mailbox, type MailboxNode } from '@kq/core';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const interopDir = fileURLToPath(new URL('./interop', import.meta.url));
const brokers = [
  { kind: 'redis' as const, url: 'redis://127.0.0.1:6379/8', python: 'redis://127.0.0.1:6379/8' },
  { kind: 'amqp' as const, url: 'amqp://guest:guest@127.0.0.1:5672', python: 'amqp://guest:guest@127.0.0.1:5672//' },
];
const python = await pythonAvailable(['celery']);

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(pythonInterpreter, args, { cwd: interopDir, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

for (const broker of brokers) {
  const up = await brokerReachable(broker.kind, broker.url);
  describe.skipIf(!up || !python)(`Mailbox interop with Python Celery on ${broker.kind}`, () => {
    const namespace = `kqmbx${randomUUID().slice(0, 8)}`;
    let connection: Connection;
    let node: MailboxNode;
    let worker: ChildProcess | undefined;

    beforeAll(async () => {
      connection = new Connection(broker.url);
      node = new Mailbox(connection, { namespace }).node(`kq1@${namespace}`, {
        ping: () => ({ ok: 'pong' }),
        clock: () => ({ clock: 41 }),
      });
      await node.listen();
    });

    afterAll(async () => {
      worker?.kill('SIGKILL');
      await node.close();
      await connection.close();
    });

    it('answers `celery inspect ping` with Celery\'s pong shape', async () => {
      const result = await run(['-m', 'celery', '-A', 'mailbox_app', 'inspect', 'ping', '-j', '-d', `kq1@${namespace}`, '--timeout', '3'], {
        KQ_INTEROP_BROKER: broker.python,
        KQ_INTEROP_NAMESPACE: namespace,
      });
      expect(result.stderr).not.toMatch(/Traceback/);
      expect(JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}')).toEqual({ [`kq1@${namespace}`]: { ok: 'pong' } });
    });

    it('collects the reply of a real Python worker to a kq broadcast', async () => {
      worker = spawn(
        pythonInterpreter,
        ['-m', 'celery', '-A', 'mailbox_app', 'worker', '-n', `py1@${namespace}`, '--pool', 'solo', '--without-mingle', '--without-gossip', '-l', 'warning'],
        { cwd: interopDir, env: { ...process.env, KQ_INTEROP_BROKER: broker.python, KQ_INTEROP_NAMESPACE: namespace, KQ_INTEROP_QUEUE: `${namespace}.q` }, stdio: 'ignore' },
      );
      const client = new Mailbox(connection, { namespace });
      let replies: Array<Record<string, unknown>> = [];
      const deadline = Date.now() + 20_000;
      // The Python worker needs a few seconds to boot; ping until it answers.
      while (Date.now() < deadline) {
        replies = await client.broadcast('ping', { reply: true, timeout: 1000 });
        if (replies.some((reply) => `py1@${namespace}` in reply)) break;
      }
      await client.close();
      expect(replies).toEqual(expect.arrayContaining([{ [`py1@${namespace}`]: { ok: 'pong' } }, { [`kq1@${namespace}`]: { ok: 'pong' } }]));
    }, 30_000);
  });
}
