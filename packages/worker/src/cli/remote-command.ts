import type { MailboxReply } from '@kq/core';
import type { Command } from 'commander';
import type { App } from '../app/app';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { commaList, jsonObject, positiveSeconds } from './option-parsers';
import { formatReply, nodesOnline } from './reply-format';
import { commandArguments, remoteCommand, remoteCommandList } from './remote-command-catalog';

interface RemoteOptions {
  destination?: string[];
  timeout?: number;
  json?: boolean;
  args?: Record<string, unknown>;
}

function withRemoteOptions(command: Command): Command {
  return command
    .option('-d, --destination <nodes>', 'comma-separated node names (name@host) to send to; default: every worker', commaList)
    .option('-t, --timeout <seconds>', 'how long to wait for replies (default 1)', positiveSeconds)
    .option('-j, --json', 'print the replies as one JSON object')
    .option('--args <json>', 'extra arguments as a JSON object, merged over the positional ones', jsonObject);
}

/**
 * `kq inspect <command> [args…]` and `kq control <command> [args…]`: sends the command to every worker (or `-d`
 * nodes), prints each reply as it arrives like Celery's CLI, then `N nodes online.` — or, with `-j`, the replies as
 * one JSON object. Exit code 69 when nobody replied, as Celery's; 2 for a command Celery's CLI does not know.
 */
export function registerRemoteCommands(program: Command): void {
  for (const kind of ['inspect', 'control'] as const) {
    withRemoteOptions(
      program
        .command(kind)
        .description(kind === 'inspect' ? 'Ask the workers about their state (celery inspect).' : 'Tell the workers to change (celery control).')
        .argument('[command]', `the ${kind} command (see below)`)
        .argument('[args...]', "the command's arguments, as Celery's CLI takes them")
        .addHelpText('after', `\nCommands:\n${remoteCommandList(kind)}`),
    ).action(async (name: string | undefined, words: string[], options: RemoteOptions, command: Command) => {
      if (!name) {
        // As `celery control` alone: say what there is to send.
        console.log(`Usage: kq ${kind} <command> [args...]\n\nCommands:\n${remoteCommandList(kind)}`);
        return;
      }
      if (!remoteCommand(kind, name)) {
        command.error(`kq ${kind}: unknown command ${JSON.stringify(name)}. The ${kind} commands are:\n${remoteCommandList(kind)}`, {
          exitCode: 2,
          code: 'kq.unknownRemoteCommand',
        });
      }
      const args = { ...commandArguments(name, words), ...options.args };
      const app = await loadApp({ ...globalOptions(command), oneShot: true });
      try {
        process.exitCode = await broadcastAndPrint(app, name, args, { ...options, showReply: true });
      } finally {
        await app.close();
      }
    });
  }

  withRemoteOptions(program.command('status').description('List the workers that answer a ping (celery status).')).action(
    async (options: RemoteOptions, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), oneShot: true });
      try {
        process.exitCode = await broadcastAndPrint(app, 'ping', {}, { ...options, showReply: false });
      } finally {
        await app.close();
      }
    },
  );
}

async function broadcastAndPrint(app: App, method: string, args: Record<string, unknown>, options: RemoteOptions & { showReply: boolean }): Promise<number> {
  const colour = process.stdout.isTTY === true && !process.env['NO_COLOR'];
  const replies: MailboxReply[] = await app.control.broadcast(method, {
    arguments: args,
    reply: true,
    timeout: (options.timeout ?? 1) * 1000,
    ...(options.destination ? { destination: options.destination } : {}),
    ...(options.json
      ? {}
      : {
          callback: (reply: MailboxReply) => {
            const node = Object.keys(reply)[0];
            if (node !== undefined) console.log(formatReply(node, reply[node], { showReply: options.showReply, colour }));
          },
        }),
  });
  if (replies.length === 0) {
    console.error('Error: No nodes replied within time constraint');
    return 69;
  }
  if (options.json) console.log(JSON.stringify(Object.assign({}, ...replies)));
  else console.log(nodesOnline(replies.length));
  return 0;
}
