/**
 * Rejected task messages are kept, not dropped: on Redis in `_kq.dead` with the worker's reason (RabbitMQ would
 * dead-letter them, Kombu's Redis drops them), on RabbitMQ in the queue's dead-letter queue; `kq dlq` lists them,
 * sends them back to their queue and purges them.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Exchange, Queue, hasDeadLetters, type DeadLetterBox } from '@kq/core';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Reject } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqCli = fileURLToPath(new URL('../src/cli/kq.ts', import.meta.url));
const quiet = (): Logger => new Logger('dlq', { level: 'critical', sink: () => undefined });

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function kq(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', kqCli, ...args], { cwd: repoRoot, env: { ...process.env, ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const setups = [
  { kind: 'redis' as const, broker: `${brokerUrls.redis}/9` },
  { kind: 'amqp' as const, broker: brokerUrls.amqp },
];

for (const setup of setups) {
  const up = await brokerReachable(setup.kind, setup.broker);
  describe.skipIf(!up)(`dead letters on ${setup.kind}`, () => {
    let app: App | undefined;
    let worker: Worker | undefined;
    afterEach(async () => {
      await worker?.stop();
      await app?.close();
    });

    it('keeps a rejected task with its reason, lists it, sends it back to run, and purges (API and kq dlq)', async () => {
      const ns = `kqdlq${randomUUID().slice(0, 8)}`;
      const queueName = `${ns}.q`;
      const dlqName = `${ns}.dlq`;
      // RabbitMQ dead-letters through the queue's own arguments; Redis needs nothing declared.
      const queues =
        setup.kind === 'amqp'
          ? [new Queue(queueName, { exchange: new Exchange(queueName), routingKey: queueName, deadLetterExchange: `${ns}.dlx`, deadLetterRoutingKey: dlqName })]
          : [];
      app = new App('dlq', { broker: setup.broker, taskDefaultQueue: queueName, controlExchange: ns, taskQueues: queues });
      let attempts = 0;
      app.task(
        'dlq.picky',
        (_ctx, value: number) => {
          attempts++;
          if (attempts === 1) throw new Reject(`not today (${value})`, false);
          return value;
        },
        { acksLate: true },
      );
      if (setup.kind === 'amqp') {
        const channel = await app.connection.channel();
        await channel.declareExchange(new Exchange(`${ns}.dlx`));
        await channel.declareQueue(new Queue(dlqName, { exchange: new Exchange(`${ns}.dlx`), routingKey: dlqName }));
      }
      worker = app.worker({ hostname: `dlq@${ns}`, concurrency: 1, logger: quiet(), enableRemoteControl: false, cluster: false });
      await worker.start();
      const sent = await app.sendTask('dlq.picky', [7]);
      const transport = await app.connection.transport();
      expect(hasDeadLetters(transport)).toBe(true);
      const box = (transport as unknown as { deadLetters(): DeadLetterBox }).deadLetters();
      const where = setup.kind === 'amqp' ? dlqName : queueName;
      const [letter] = await waitFor(async () => {
        const letters = await box.list({ queue: where });
        return letters.length > 0 ? letters : undefined;
      }, 'the rejected message');
      expect(letter).toMatchObject({ queue: queueName });
      expect(letter!.headers['id']).toBe(sent.id);
      if (setup.kind === 'redis') expect(letter!.reason).toBe('Reject: not today (7)');
      else expect(letter!.reason).toBe('rejected');

      const env = { KQ_BROKER_URL: setup.broker };
      const listed = await kq(['dlq', 'list', '-Q', where, '-j'], env);
      expect(listed.code, listed.err).toBe(0);
      expect((JSON.parse(listed.out) as Array<{ task_id: string }>).map((entry) => entry.task_id)).toEqual([sent.id]);

      const requeued = await kq(['dlq', 'requeue', '-Q', where], env);
      expect(requeued.out).toContain('Sent 1 message(s) back');
      await waitFor(async () => (attempts === 2 ? true : undefined), 'the task to run again');
      expect(await box.list({ queue: where })).toEqual([]);

      // Purge: one more rejected message, then `kq dlq purge` (refused without -f when not on a terminal).
      attempts = 0;
      await app.sendTask('dlq.picky', [8]);
      await waitFor(async () => ((await box.list({ queue: where })).length === 1 ? true : undefined), 'the second rejected message');
      expect((await kq(['dlq', 'purge', '-Q', where], env)).code).toBe(1);
      expect((await kq(['dlq', 'purge', '-Q', where, '-f'], env)).out).toContain('Purged 1');
      expect(await box.list({ queue: where })).toEqual([]);
    }, 60_000);
  });
}
