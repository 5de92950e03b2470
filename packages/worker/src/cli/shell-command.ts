import type { Command } from 'commander';
import type { App } from '../app/app';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';

/**
 * `kq shell`: a Node REPL with the app loaded (celery shell): `app`, `tasks` (every registered task by name) and
 * each task by its last name segment when that is a free identifier (`add` for `proj.add`). Top-level await works.
 */
export function registerShellCommand(program: Command): void {
  program
    .command('shell')
    .description('A REPL with the app and its tasks loaded (celery shell).')
    .action(async (_flags: unknown, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), requireBroker: false });
      const context = shellContext(app);
      console.log(`kq shell — app ${app.name}; in scope: ${Object.keys(context).join(', ')}`);
      if (app.conf.broker.startsWith('memory://')) console.log('No broker is configured (memory://): tasks sent from here run only on a worker started in this shell; pass -b to reach your fleet.');
      // Loaded here, not with the CLI: every `kq` command would otherwise compile the REPL (~10 ms of a worker's start).
      const { start } = await import('node:repl');
      const repl = start({ prompt: 'kq> ', terminal: process.stdin.isTTY === true && process.stdout.isTTY === true });
      Object.assign(repl.context, context);
      await new Promise<void>((resolve) => repl.once('exit', () => resolve()));
      await app.close();
    });
}

function shellContext(app: App): Record<string, unknown> {
  const tasks = Object.fromEntries([...app.tasks.entries()].filter(([name]) => !name.startsWith('celery.')));
  const context: Record<string, unknown> = { app, tasks };
  const short = new Map<string, unknown>();
  const clashes = new Set<string>();
  for (const [name, task] of Object.entries(tasks)) {
    const last = name.split('.').pop() ?? name;
    if (!/^[A-Za-z_$][\w$]*$/.test(last) || last in context) continue;
    if (short.has(last)) clashes.add(last);
    short.set(last, task);
  }
  for (const [name, task] of short) if (!clashes.has(name)) context[name] = task;
  return context;
}
