import { KqError, hasDeadLetters, sanitizeUrl, type DeadLetter, type DeadLetterBox } from '@kq/core';
import type { Command } from 'commander';
import type { App } from '../app/app';
import { confirm } from './confirm';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { commaList, positiveInt } from './option-parsers';

interface DlqFlags {
  queue?: string;
  limit: number;
  id?: string[];
  json?: boolean;
  force?: boolean;
}

/**
 * `kq dlq list|requeue|purge`: the rejected task messages a broker keeps — Redis's `_kq.dead` list (filter with
 * `-Q <task queue>`), RabbitMQ's dead-letter queue (name it with `-Q`). `list` shows them with their reason,
 * `requeue` sends them back to the queue they were rejected from, `purge` deletes them.
 */
export function registerDlqCommand(program: Command): void {
  const dlq = program.command('dlq').description('The rejected task messages the broker keeps: list, requeue or purge them.');
  const queue = (command: Command): Command => command.option('-Q, --queue <name>', 'only the messages rejected from this queue (RabbitMQ: the dead-letter queue)');
  queue(dlq.command('list').description('Show the rejected messages with their reason.'))
    .option('--limit <n>', 'at most this many', positiveInt, 100)
    .option('-j, --json', 'as JSON')
    .action((flags: DlqFlags, command: Command) => withDeadLetters(command, async (box) => {
      const letters = await box.list({ ...(flags.queue ? { queue: flags.queue } : {}), limit: flags.limit });
      if (flags.json) console.log(JSON.stringify(letters.map(describe), null, 2));
      else if (letters.length === 0) console.log('No rejected messages.');
      else for (const letter of letters) console.log(line(letter));
    }));
  queue(dlq.command('requeue').description('Send rejected messages back to the queue they were rejected from.'))
    .option('--id <ids>', 'only these messages (comma-separated ids from `kq dlq list`)', commaList)
    .action((flags: DlqFlags, command: Command) => withDeadLetters(command, async (box) => {
      const sent = await box.requeue({ ...(flags.queue ? { queue: flags.queue } : {}), ...(flags.id ? { ids: flags.id } : {}) });
      console.log(`Sent ${sent} message(s) back to their queue.`);
    }));
  queue(dlq.command('purge').description('Delete rejected messages for good (asks first; -f to skip the question).'))
    .option('-f, --force', 'do not ask')
    .action((flags: DlqFlags, command: Command) => withDeadLetters(command, async (box, app) => {
      const what = `the rejected messages${flags.queue ? ` of ${flags.queue}` : ''} on ${sanitizeUrl(app.conf.broker)}`;
      if (!flags.force && !(await confirm(`Delete ${what}?`, 'kq dlq purge deletes messages for good: add -f to confirm.'))) {
        process.exitCode = 1;
        return;
      }
      console.log(`Purged ${await box.purge(flags.queue ? { queue: flags.queue } : {})} rejected message(s).`);
    }));
}

async function withDeadLetters(command: Command, use: (box: DeadLetterBox, app: App) => Promise<void>): Promise<void> {
  const app = await loadApp({ ...globalOptions(command), oneShot: true });
  try {
    await app.connection.connect();
    const transport = await app.connection.transport();
    if (!hasDeadLetters(transport)) {
      throw new KqError(`The ${transport.name} transport keeps no rejected messages (kq dlq works on Redis and RabbitMQ).`);
    }
    await use(transport.deadLetters(), app);
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
