import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { registerBeatCommand } from './beat-command';
import { registerDlqCommand } from './dlq-command';
import { registerEventsCommand } from './events-command';
import { externalCommandsHelp } from './external-command';
import { GLOBAL_OPTION_HELP } from './global-options';
import { registerRemoteCommands } from './remote-command';
import { registerReportCommand } from './report-command';
import { registerShellCommand } from './shell-command';
import { registerTaskCommands } from './task-commands';
import { registerWorkerCommand } from './worker-command';

const BROKER_NOTE = `
The broker comes from -b, KQ_BROKER_URL (or CELERY_BROKER_URL) or the app module (-A); with none, commands that
cross processes refuse to run, as memory:// lives in one process (pass -b memory:// to use it anyway).
Global options go before or after the command: kq -A proj worker -l info, as celery -A proj worker -l info.`;

/** The `kq` command line: Celery's commands and flags, with help on every command and typo suggestions. */
export function buildProgram(): Command {
  const program = new Command('kq')
    .description('kq — Celery for Node')
    .version(`kq ${packageVersion()}`, '-V, --version', 'print the version')
    .addOption(new Option('-A, --app <module>', GLOBAL_OPTION_HELP.app))
    .addOption(new Option('-b, --broker <url>', GLOBAL_OPTION_HELP.broker))
    .addOption(new Option('--result-backend <url>', GLOBAL_OPTION_HELP.resultBackend))
    .showSuggestionAfterError()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    // Computed when help is shown: the kq-<name> programs installed then.
    .addHelpText('after', () => externalCommandsHelp())
    .addHelpText('after', BROKER_NOTE)
    .exitOverride();
  registerWorkerCommand(program);
  registerTaskCommands(program);
  registerRemoteCommands(program);
  registerEventsCommand(program);
  registerBeatCommand(program);
  registerDlqCommand(program);
  registerReportCommand(program);
  registerShellCommand(program);
  // Every subcommand reports usage errors through the program's handler, not by exiting on its own.
  for (const command of allCommands(program)) command.exitOverride().showSuggestionAfterError().showHelpAfterError('(add --help for usage)');
  return program;
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}

function packageVersion(): string {
  // dist/cli/kq.js and src/cli/program.ts both sit two folders below package.json
  for (const candidate of ['../../package.json', '../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // the other layout
    }
  }
  return 'unknown';
}
