import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installCommand } from '@kq/core';

/**
 * `kq <name>` for a name that is no built-in command runs the program `kq-<name>`, as `git <name>` runs `git-<name>`:
 * other packages add commands by shipping such a bin (`@kq/dashboard` ships `kq-dashboard`), so kq never imports them.
 */
const PREFIX = 'kq-';

/**
 * kq's optional packages that add a command, named only so that `kq --help` lists them and a missing one is one line
 * saying what to install. The command itself is always the `kq-<name>` program, found like any other.
 */
const PACKAGED_COMMANDS: Readonly<Record<string, { package: string; summary: string }>> = {
  dashboard: { package: '@kq/dashboard', summary: 'Run the dashboard: live UI, Flower-compatible API and metrics (--help for its flags).' },
};

/** Global options that take a value: the command word comes after them. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['-A', '--app', '-b', '--broker', '--result-backend']);

/** Where the command word is on a `kq` line, skipping global options and their values; -1 when there is none. */
export function commandWordIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (GLOBAL_OPTIONS_WITH_VALUE.has(arg)) i++;
    else if (!arg.startsWith('-')) return i;
  }
  return -1;
}

/**
 * The folders searched for `kq-<name>`, first match wins, as npm finds bins: `node_modules/.bin` of the current
 * folder and each above it, then of the folders holding this kq (a global or nested install), then `PATH`.
 */
export function commandSearchPath(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string[] {
  const folders = [...binFoldersUp(cwd), ...binFoldersUp(dirname(fileURLToPath(import.meta.url))), ...(env['PATH'] ?? '').split(delimiter)];
  return [...new Set(folders.filter(Boolean))];
}

function binFoldersUp(start: string): string[] {
  const folders: string[] = [];
  for (let folder = start; ; folder = dirname(folder)) {
    folders.push(join(folder, 'node_modules', '.bin'));
    if (dirname(folder) === folder) return folders;
  }
}

/** The program `kq-<name>`, or undefined when none is installed. */
export function findExternalCommand(name: string, searchPath: readonly string[] = commandSearchPath()): string | undefined {
  // Windows: package managers write `.cmd` shims next to the shell scripts.
  const files = process.platform === 'win32' ? [`${PREFIX}${name}.cmd`, `${PREFIX}${name}.exe`] : [`${PREFIX}${name}`];
  for (const folder of searchPath) {
    for (const file of files) if (existsSync(join(folder, file))) return join(folder, file);
  }
  return undefined;
}

/** The help lines for commands that come from other packages: the ones kq knows of, and any `kq-*` program found. */
export function externalCommandsHelp(searchPath: readonly string[] = commandSearchPath()): string {
  const found = new Set<string>();
  for (const folder of searchPath) {
    let entries: string[];
    try {
      entries = readdirSync(folder);
    } catch {
      continue; // a folder that does not exist
    }
    for (const entry of entries) if (entry.startsWith(PREFIX)) found.add(entry.slice(PREFIX.length).replace(/\.(cmd|exe|ps1)$/i, ''));
  }
  const names = [...new Set([...Object.keys(PACKAGED_COMMANDS), ...found])].sort();
  const lines = names.map((name) => {
    const known = PACKAGED_COMMANDS[name];
    const summary = known ? `${known.summary}${found.has(name) ? '' : ` Needs ${known.package}.`}` : `Runs the ${PREFIX}${name} program.`;
    return `  ${name.padEnd(22)}${summary}`;
  });
  return `\nCommands from other packages (kq <name> runs the ${PREFIX}<name> program):\n${lines.join('\n')}`;
}

/** What to say when `kq <name>` has no program: the package to install, for the commands kq knows of. */
export function missingCommandHint(name: string): string | undefined {
  const known = PACKAGED_COMMANDS[name];
  return known && `kq ${name} needs the ${known.package} package, which is not installed. Run: ${installCommand(known.package)}`;
}

/**
 * Runs `program` with `args`, sharing this process's stdin, stdout and stderr, passing on SIGINT and SIGTERM, and
 * resolves to its exit code (128 + the signal's number when a signal ended it, as a shell reports it).
 */
export function runExternalCommand(program: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    // `.cmd` shims run only through the shell on Windows.
    const child = spawn(program, [...args], { stdio: 'inherit', shell: process.platform === 'win32' });
    const forwarded = ['SIGINT', 'SIGTERM'] as const;
    // While the child runs, a signal to kq is the child's to act on (the dashboard stops cleanly), not kq's to die of.
    const pass = (signal: NodeJS.Signals): void => void child.kill(signal);
    for (const signal of forwarded) process.on(signal, pass);
    const done = (): void => {
      for (const signal of forwarded) process.off(signal, pass);
    };
    child.once('error', (error) => {
      done();
      reject(error);
    });
    child.once('exit', (code, signal) => {
      done();
      resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}
