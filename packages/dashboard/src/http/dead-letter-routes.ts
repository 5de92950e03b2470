import { KqError, hasDeadLetters, isRecoverable, type DeadLetter, type DeadLetterBox } from '@kq/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { field, numberField } from './request-fields';

/** One kept message as the page shows it: where from, why, when, and the task it carried. */
function describe(letter: DeadLetter, kept: string | null): Record<string, unknown> {
  return {
    id: letter.id,
    // The RabbitMQ dead-letter queue it is kept in (requeue and purge name it); null on Redis (one list).
    dead_letter_queue: kept,
    queue: letter.queue,
    reason: letter.reason,
    at: letter.at === null ? null : letter.at / 1000,
    task: letter.headers['task'] ?? null,
    task_id: letter.headers['id'] ?? null,
    content_type: letter.contentType,
    body: letter.body.toString('utf8').slice(0, 2000),
  };
}

/**
 * The rejected messages the broker keeps (Redis: `_kq.dead`; RabbitMQ: dead-letter queues), as `kq dlq` shows them:
 * list, send back to the queue they came from, purge. Not Flower's (it has none): under `/dashboard/`. On RabbitMQ
 * a `queue` field names the dead-letter queue; without it, the dashboard's `deadLetterQueues` are read one by one
 * (RabbitMQ cannot say which queue a dead-letter exchange feeds), and none configured is a 400 saying so.
 */
export function registerDeadLetterRoutes(server: FastifyInstance, dashboard: DashboardView): void {
  const box = async (reply: FastifyReply): Promise<DeadLetterBox | undefined> => {
    const transport = await dashboard.app.connection.transport();
    if (hasDeadLetters(transport)) return transport.deadLetters();
    void reply.code(501).send({ error: `The ${transport.name} transport keeps no rejected messages.` });
    return undefined;
  };
  /** The dead-letter queues to act on: the one named, else the configured ones; [undefined] = the broker's one place (Redis). */
  const targets = async (request: FastifyRequest): Promise<ReadonlyArray<string | undefined>> => {
    const named = field(request, 'queue');
    if (named) return [named];
    const transport = await dashboard.app.connection.transport();
    return transport.name === 'amqp' && dashboard.deadLetterQueues.length > 0 ? dashboard.deadLetterQueues : [undefined];
  };
  /** The box's own refusal (RabbitMQ without a queue named, or no such queue) is the caller's to fix: 400 with its message. */
  const refused = (reply: FastifyReply, error: unknown): FastifyReply => {
    if (error instanceof KqError && !isRecoverable(error)) return reply.code(400).send({ error: error.message });
    throw error;
  };
  server.get('/dashboard/dead-letters', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    const limit = numberField(request, 'limit') ?? 100;
    const amqp = (await dashboard.app.connection.transport()).name === 'amqp';
    try {
      const found: Array<Record<string, unknown>> = [];
      for (const queue of await targets(request)) {
        const kept = await letters.list({ ...(queue ? { queue } : {}), limit });
        found.push(...kept.map((letter) => describe(letter, amqp ? (queue ?? null) : null)));
      }
      return found.slice(0, limit);
    } catch (error) {
      return refused(reply, error);
    }
  });
  server.post('/dashboard/dead-letters/requeue', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    const ids = field(request, 'ids')?.split(',').filter(Boolean);
    try {
      let sent = 0;
      for (const queue of await targets(request)) sent += await letters.requeue({ ...(queue ? { queue } : {}), ...(ids ? { ids } : {}) });
      return { message: `Sent ${sent} message(s) back to their queue.` };
    } catch (error) {
      return refused(reply, error);
    }
  });
  server.post('/dashboard/dead-letters/purge', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    try {
      let purged = 0;
      for (const queue of await targets(request)) purged += await letters.purge(queue ? { queue } : {});
      return { message: `Purged ${purged} rejected message(s).` };
    } catch (error) {
      return refused(reply, error);
    }
  });
}
