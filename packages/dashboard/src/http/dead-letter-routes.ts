import { hasDeadLetters, type DeadLetter, type DeadLetterBox } from '@kq/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Dashboard } from '../dashboard';
import { field, numberField } from './request-fields';

/** One kept message as the page shows it: where from, why, when, and the task it carried. */
function describe(letter: DeadLetter): Record<string, unknown> {
  return {
    id: letter.id,
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
 * The rejected messages the broker keeps (Redis: `_kq.dead`; RabbitMQ: the dead-letter queue named by `queue`), as
 * `kq dlq` shows them: list, send back to the queue they came from, purge. Not Flower's (it has none): under
 * `/dashboard/`.
 */
export function registerDeadLetterRoutes(server: FastifyInstance, dashboard: Dashboard): void {
  const box = async (reply: FastifyReply): Promise<DeadLetterBox | undefined> => {
    const transport = await dashboard.app.connection.transport();
    if (hasDeadLetters(transport)) return transport.deadLetters();
    void reply.code(501).send({ error: `The ${transport.name} transport keeps no rejected messages.` });
    return undefined;
  };
  server.get('/dashboard/dead-letters', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    const queue = field(request, 'queue');
    const limit = numberField(request, 'limit') ?? 100;
    return (await letters.list({ ...(queue ? { queue } : {}), limit })).map(describe);
  });
  server.post('/dashboard/dead-letters/requeue', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    const queue = field(request, 'queue');
    const ids = field(request, 'ids')?.split(',').filter(Boolean);
    const sent = await letters.requeue({ ...(queue ? { queue } : {}), ...(ids ? { ids } : {}) });
    return { message: `Sent ${sent} message(s) back to their queue.` };
  });
  server.post('/dashboard/dead-letters/purge', async (request, reply) => {
    const letters = await box(reply);
    if (!letters) return reply;
    const queue = field(request, 'queue');
    return { message: `Purged ${await letters.purge(queue ? { queue } : {})} rejected message(s).` };
  });
}
