import { parseArgs } from 'node:util';
import { KqError, hasDeadLetters, sanitizeUrl, type DeadLetter } from '@kq/core';
import { loadApp } from './load-app';

export const DLQ_USAGE = 'kq dlq list|requeue|purge [-A module] [-b url] [-Q queue] [--limit N] [--id id,...] [-j] [-f]';

/**
 * `kq dlq`: the rejected task messages a broker keeps — Redis's `_kq.dead` list (filter with `-Q <task queue>`),
 * RabbitMQ's dead-letter queue (name it with `-Q`). `list` shows them with their reason, `requeue` sends them back
 * to the queue they were rejected from, `purge` deletes them.
 */
export async function dlqCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      app: { type: 'string', short: 'A' },
      broker: { type: 'string', short: 'b' },
      queue: { type: 'string', short: 'Q' },
      limit: { type: 'string' },
      id: { type: 'string' },
      json: { type: 'boolean', short: 'j' },
      force: { type: 'boolean', short: 'f' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const action = positionals[0];
  if (values.help || !action) {
    console.log(`Usage: ${DLQ_USAGE}`);
    return values.help ? 0 : 64;
  }
  if (action !== 'list' && action !== 'requeue' && action !== 'purge') throw new KqError(`Unknown dlq action ${JSON.stringify(action)}: use list, requeue or purge.`);
  const app = await loadApp({ app: values.app, broker: values.broker, oneShot: true });
  try {
    await app.connection.connect();
    const transport = await app.connection.transport();
    if (!hasDeadLetters(transport)) {
      throw new KqError(`The ${transport.name} transport keeps no rejected messages (kq dlq works on Redis and RabbitMQ).`);
    }
    const box = transport.deadLetters();
    const queue = values.queue === undefined ? {} : { queue: values.queue };
    if (action === 'list') {
      const letters = await box.list({ ...queue, limit: values.limit === undefined ? 100 : Number(values.limit) });
      if (values.json) console.log(JSON.stringify(letters.map(describe), null, 2));
      else if (letters.length === 0) console.log('No rejected messages.');
      else for (const letter of letters) console.log(line(letter));
      return 0;
    }
    if (action === 'requeue') {
      const ids = values.id?.split(',').map((id) => id.trim()).filter(Boolean);
      const sent = await box.requeue({ ...queue, ...(ids ? { ids } : {}) });
      console.log(`Sent ${sent} message(s) back to their queue.`);
      return 0;
    }
    if (!values.force) {
      // As `celery purge`: deleting needs a yes, and without a terminal to ask on it needs -f.
      if (!process.stdin.isTTY) throw new KqError('kq dlq purge deletes messages for good: add -f to confirm.');
      process.stdout.write(`Delete the rejected messages${values.queue ? ` of ${values.queue}` : ''} on ${sanitizeUrl(app.conf.broker)}? [y/N] `);
      const answer = await new Promise<string>((resolve) => process.stdin.once('data', (data) => resolve(String(data).trim())));
      if (!/^y(es)?$/i.test(answer)) return 1;
    }
    console.log(`Purged ${await box.purge(queue)} rejected message(s).`);
    return 0;
  } finally {
    await app.close();
  }
}

function describe(letter: DeadLetter): Record<string, unknown> {
  return {
    id: letter.id,
    queue: letter.queue,
    reason: letter.reason,
    at: letter.at === null ? null : new Date(letter.at).toISOString(),
    task: letter.headers['task'] ?? null,
    task_id: letter.headers['id'] ?? null,
    content_type: letter.contentType,
    body: letter.body.toString('utf8'),
  };
}

function line(letter: DeadLetter): string {
  const when = letter.at === null ? '' : `${new Date(letter.at).toISOString()} `;
  const task = typeof letter.headers['task'] === 'string' ? `${letter.headers['task']}[${String(letter.headers['id'] ?? '?')}]` : letter.contentType;
  return `${when}${letter.id} ${letter.queue} ${task}: ${letter.reason}`;
}
