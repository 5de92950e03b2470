import { KqError, sanitizeUrl } from '@kq/core';
import type { Command } from 'commander';
import type { ApplyOptions } from '../send/apply-options';
import { confirm } from './confirm';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { commaList, isoTime, jsonArray, jsonObject, nonNegativeNumber, positiveSeconds, secondsOrTime } from './option-parsers';

interface CallFlags {
  args: unknown[];
  kwargs: Record<string, unknown>;
  countdown?: number;
  eta?: Date;
  expires?: number | Date;
  queue?: string;
  exchange?: string;
  routingKey?: string;
  serializer?: string;
  priority?: number;
  wait?: boolean;
  timeout: number;
}

/** `kq call`, `kq result` and `kq purge`: Celery's `call`, `result` and `purge`, with their flags. */
export function registerTaskCommands(program: Command): void {
  program
    .command('call')
    .description('Send a task by name and print its id (celery call); --wait also prints its result.')
    .argument('<task>', 'the task name, e.g. proj.add')
    .option('-a, --args <json>', 'positional arguments, a JSON array', jsonArray, [])
    .option('-k, --kwargs <json>', 'keyword arguments, a JSON object', jsonObject, {})
    .option('--countdown <seconds>', 'run no sooner than this many seconds from now', nonNegativeNumber)
    .option('--eta <time>', 'run no sooner than this ISO 8601 time', isoTime)
    .option('--expires <seconds|time>', 'discard the task if it has not run by then (seconds from now, or ISO 8601)', secondsOrTime)
    .option('-Q, --queue <name>', 'send to this queue')
    .option('--exchange <name>', 'send through this exchange')
    .option('--routing-key <key>', 'with this routing key')
    .option('--serializer <name>', 'json (default), msgpack, yaml')
    .option('--priority <n>', 'message priority (0-9 on RabbitMQ, 0-9 steps on Redis)', Number)
    .option('-w, --wait', 'wait for the result and print it')
    .option('--timeout <seconds>', 'how long --wait waits', positiveSeconds, 30)
    .action(async (name: string, flags: CallFlags, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), oneShot: true });
      try {
        const options: ApplyOptions = {
          ...(flags.countdown !== undefined ? { countdown: flags.countdown } : {}),
          ...(flags.eta ? { eta: flags.eta } : {}),
          ...(flags.expires !== undefined ? { expires: flags.expires } : {}),
          ...(flags.queue ? { queue: flags.queue } : {}),
          ...(flags.exchange !== undefined ? { exchange: flags.exchange } : {}),
          ...(flags.routingKey ? { routingKey: flags.routingKey } : {}),
          ...(flags.serializer ? { serializer: flags.serializer } : {}),
          ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
        };
        const handle = await app.sendTask(name, flags.args, flags.kwargs, options);
        console.log(handle.id);
        if (flags.wait) console.log(JSON.stringify(await handle.get({ timeout: flags.timeout * 1000 })));
      } finally {
        await app.close();
      }
    });

  program
    .command('result')
    .description("Print a task's result meta (celery result); --traceback prints only its traceback.")
    .argument('<task-id>', 'the id `kq call` printed')
    .option('--timeout <seconds>', 'wait up to this long for the task to finish', positiveSeconds)
    .option('--traceback', 'print the traceback of a failed task instead of the meta')
    .action(async (id: string, flags: { timeout?: number; traceback?: boolean }, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), oneShot: true });
      try {
        const handle = await app.asyncResult(id);
        if (flags.timeout !== undefined) await handle.get({ timeout: flags.timeout * 1000, propagate: false });
        const meta = await handle.meta();
        if (flags.traceback) {
          const traceback = meta?.traceback;
          if (typeof traceback === 'string' && traceback) console.log(traceback);
          else console.error(`Task ${id} has no traceback (state ${meta?.status ?? 'PENDING'}).`);
          return;
        }
        console.log(JSON.stringify(meta ?? { status: 'PENDING', task_id: id }, null, 2));
      } finally {
        await app.close();
      }
    });

  program
    .command('purge')
    .description('Delete every message waiting in the task queues (celery purge); asks first.')
    .option('-Q, --queues <names>', 'comma-separated queues (default: the app\'s default queue)', commaList)
    .option('-X, --exclude-queues <names>', 'leave these queues alone', commaList)
    .option('-f, --force', 'do not ask')
    .action(async (flags: { queues?: string[]; excludeQueues?: string[]; force?: boolean }, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), oneShot: true });
      try {
        const excluded = new Set(flags.excludeQueues ?? []);
        const queues = (flags.queues ?? [app.conf.taskDefaultQueue]).filter((queue) => !excluded.has(queue));
        if (queues.length === 0) throw new KqError('No queue left to purge after -X.');
        const what = `every message in ${queues.join(', ')} on ${sanitizeUrl(app.conf.broker)}`;
        if (!flags.force && !(await confirm(`Delete ${what}?`, `kq purge deletes ${what}: add -f to confirm.`))) {
          process.exitCode = 1;
          return;
        }
        let total = 0;
        for (const queue of queues) total += await app.connection.ensure((channel) => channel.purgeQueue(queue));
        console.log(`Purged ${total} message(s) from ${queues.length} queue(s).`);
      } finally {
        await app.close();
      }
    });
}
