import { join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { KqError, installCommand } from '@kq/core';
import type { Command } from 'commander';

/** What `@kq/dashboard` exports for its command line (the worker depends on it only at run time, if installed). */
interface DashboardModule {
  runDashboardCli(argv: readonly string[]): Promise<number>;
}

/** Listed in `kq --help`; `runKq` hands `kq dashboard …` to `@kq/dashboard` before parsing (its flags are its own). */
export function registerDashboardCommand(program: Command): void {
  program
    .command('dashboard')
    .description('Run the dashboard: live UI, Flower-compatible API and metrics (needs @kq/dashboard; --help for its flags).')
    .allowUnknownOption()
    .allowExcessArguments();
}

/** `kq dashboard …`: runs `@kq/dashboard`'s CLI with the rest of the line, or says how to install it. */
export async function runDashboardCommand(argv: readonly string[]): Promise<number> {
  const module = await importDashboard();
  return module.runDashboardCli(argv);
}

async function importDashboard(): Promise<DashboardModule> {
  try {
    return (await import('@kq/dashboard' as string)) as DashboardModule;
  } catch {
    // not visible from @kq/worker's own folder (strict installs): look from the user's project
  }
  try {
    const resolved = createRequire(join(process.cwd(), 'package.json')).resolve('@kq/dashboard');
    return (await import(pathToFileURL(resolved).href)) as DashboardModule;
  } catch {
    throw new KqError(`kq dashboard needs the @kq/dashboard package, which is not installed. Run: ${installCommand('@kq/dashboard')}`);
  }
}

/** Where `dashboard` is the command on a `kq` line, skipping global options and their values; -1 when it is not. */
export function dashboardCommandIndex(argv: readonly string[]): number {
  const withValue = new Set(['-A', '--app', '-b', '--broker', '--result-backend']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (withValue.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return arg === 'dashboard' ? i : -1;
  }
  return -1;
}
