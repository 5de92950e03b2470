import { CommanderError, type Command } from 'commander';
import { commandWordIndex, findExternalCommand, missingCommandHint, runExternalCommand } from './external-command';
import { buildProgram } from './program';

/**
 * Runs one `kq` command line and resolves to its exit code, as Celery's: 0 done, 1 a failure (one line saying what
 * to do, never a stack trace), 2 a usage error (printed with a suggestion), 69 no worker replied. A worker or beat
 * resolves once started and keeps the process alive. Commands report their code through `process.exitCode`, which
 * this reads and restores, so it also runs in process (tests).
 */
export async function runKq(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  if (argv.length === 0) {
    program.outputHelp();
    return 2;
  }
  const external = await runIfExternal(program, argv);
  if (external !== undefined) return external;
  const outer = process.exitCode;
  process.exitCode = undefined;
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return Number(process.exitCode ?? 0);
  } catch (error) {
    if (error instanceof CommanderError) {
      return ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code) ? 0 : 2;
    }
    console.error(`kq: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    process.exitCode = outer;
  }
}

/**
 * `kq <name>` where `<name>` is no built-in command: runs the `kq-<name>` program with the rest of the line (global
 * options included), or, for an optional kq package that is not installed, says in one line what to install.
 * Undefined when the line is kq's own (or an unknown word, which commander reports with a suggestion).
 */
async function runIfExternal(program: Command, argv: readonly string[]): Promise<number | undefined> {
  const at = commandWordIndex(argv);
  const name = argv[at];
  if (name === undefined || program.commands.some((command) => command.name() === name || command.aliases().includes(name)) || name === 'help') return undefined;
  const found = findExternalCommand(name);
  if (!found) {
    const hint = missingCommandHint(name);
    if (hint) console.error(`kq: ${hint}`);
    return hint ? 1 : undefined;
  }
  try {
    return await runExternalCommand(found, [...argv.slice(0, at), ...argv.slice(at + 1)]);
  } catch (error) {
    console.error(`kq: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
