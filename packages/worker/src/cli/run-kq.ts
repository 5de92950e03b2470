import { CommanderError } from 'commander';
import { dashboardCommandIndex, runDashboardCommand } from './dashboard-command';
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
  const dashboard = dashboardCommandIndex(argv);
  if (dashboard >= 0) {
    try {
      return await runDashboardCommand([...argv.slice(0, dashboard), ...argv.slice(dashboard + 1)]);
    } catch (error) {
      console.error(`kq: ${error instanceof Error ? error.message : String(error)}`);
      return 1;
    }
  }
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
