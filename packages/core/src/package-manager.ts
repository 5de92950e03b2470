import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export type PackageManager = 'npm' | 'pnpm' | 'yarn' | 'bun';

const LOCKFILES: ReadonlyArray<readonly [file: string, manager: PackageManager]> = [
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['bun.lockb', 'bun'],
  ['bun.lock', 'bun'],
  ['package-lock.json', 'npm'],
];

/**
 * The package manager the user runs: the one that started this process (`npm_config_user_agent`), else the one
 * whose lockfile is nearest above `cwd`, else npm — so a missing-package hint is a line they can paste.
 */
export function detectPackageManager(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): PackageManager {
  const agent = env['npm_config_user_agent']?.split('/')[0];
  if (agent === 'pnpm' || agent === 'yarn' || agent === 'bun' || agent === 'npm') return agent;
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    for (const [file, manager] of LOCKFILES) if (existsSync(join(dir, file))) return manager;
    if (dirname(dir) === dir) return 'npm';
  }
}

/** The command that adds `packageName` with the user's package manager (`pnpm add -D tsx`, `npm install tsx`…). */
export function installCommand(packageName: string, options: { dev?: boolean; manager?: PackageManager } = {}): string {
  const manager = options.manager ?? detectPackageManager();
  const verb = manager === 'npm' ? 'install' : 'add';
  const dev = options.dev ? (manager === 'npm' ? ' --save-dev' : ' -D') : '';
  return `${manager} ${verb}${dev} ${packageName}`;
}
