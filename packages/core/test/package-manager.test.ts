import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectPackageManager, installCommand } from '../src/package-manager';

describe('the missing-package hint names the package manager the user runs', () => {
  it('takes the one that started the process', () => {
    expect(detectPackageManager({ npm_config_user_agent: 'yarn/4.1.0 npm/? node/v20.19.0 linux x64' }, tmpdir())).toBe('yarn');
    expect(detectPackageManager({ npm_config_user_agent: 'pnpm/10.34.8 npm/? node/v20.19.0 linux x64' }, tmpdir())).toBe('pnpm');
  });

  it('else the nearest lockfile above the working directory, else npm', () => {
    const project = mkdtempSync(join(tmpdir(), 'kq-pm-'));
    const nested = mkdtempSync(join(project, 'src-'));
    expect(detectPackageManager({}, nested)).toBe('npm');
    writeFileSync(join(project, 'bun.lock'), '');
    expect(detectPackageManager({}, nested)).toBe('bun');
  });

  it('writes the command to paste', () => {
    expect(installCommand('tsx', { dev: true, manager: 'npm' })).toBe('npm install --save-dev tsx');
    expect(installCommand('tsx', { dev: true, manager: 'pnpm' })).toBe('pnpm add -D tsx');
    expect(installCommand('@kq/redis', { manager: 'yarn' })).toBe('yarn add @kq/redis');
  });
});
