// `pnpm lint:layers` — dependency-cruiser with .dependency-cruiser.cjs — on a small tree of its own shaped like the
// repository: it must fail on an upward import inside @kq/worker (a type-only one too), a file or folder circle, a
// package importing a higher one, and a test reaching into another package's src/, and pass the same tree without
// them. The drawing of the worker's layers in docs/architecture.md must name the arrows the rule allows.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as IConfiguration;

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The names of the rules the tree breaks. */
async function violations(files: Record<string, string>): Promise<string[]> {
  mkdirSync(join(root, '.kq-tmp'), { recursive: true });
  dir = mkdtempSync(join(root, '.kq-tmp', 'layers-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  const { forbidden } = config;
  const result = await cruise(['packages'], { validate: true, ruleSet: { forbidden: forbidden ?? [] }, tsPreCompilationDeps: true, baseDir: dir });
  const output = result.output as ICruiseResult;
  return [...new Set(output.summary.violations.map((violation) => violation.rule.name))].sort();
}

/** A worker with a few layers, importing downwards only. */
const sound: Record<string, string> = {
  'packages/core/src/index.ts': 'export const core = 1;\n',
  'packages/worker/src/errors/errors.ts': 'export class KqWorkerError extends Error {}\n',
  'packages/worker/src/protocol/nodename.ts': "import { KqWorkerError } from '../errors/errors';\nexport const node = (): Error => new KqWorkerError();\n",
  'packages/worker/src/app/app.ts': "import { node } from '../protocol/nodename';\nexport class App { n = node(); }\n",
  'packages/worker/src/index.ts': "export { App } from './app/app';\n",
  'packages/worker/test/app.test.ts': "import { App } from '../src/app/app';\nexport const app = new App();\n",
};

describe('pnpm lint:layers', { timeout: 60_000 }, () => {
  it('passes a tree that imports downwards only', async () => {
    expect(await violations(sound)).toEqual([]);
  });

  it('fails on an upward import inside @kq/worker, also a type-only one', async () => {
    const upward = { ...sound, 'packages/worker/src/protocol/task-repr.ts': "import type { App } from '../app/app';\nexport type Repr = App;\n" };
    expect(await violations(upward)).toContain('worker-protocol');
  });

  it('fails on a folder of @kq/worker the rule does not name', async () => {
    expect(await violations({ ...sound, 'packages/worker/src/helpers/misc.ts': "import { node } from '../protocol/nodename';\nexport const m = node;\n" })).toEqual(['worker-unlisted-folder']);
  });

  it('fails on a cycle between files, of value imports or of type-only ones inside one folder', async () => {
    const valueCycle = {
      ...sound,
      'packages/worker/src/protocol/a.ts': "import { b } from './b';\nexport const a = (): number => b;\n",
      'packages/worker/src/protocol/b.ts': "import { a } from './a';\nexport const b = 1;\nexport const c = a;\n",
    };
    expect(await violations(valueCycle)).toEqual(['no-circular']);
    const typeCycle = {
      ...sound,
      'packages/worker/src/protocol/a.ts': "import type { B } from './b';\nexport interface A { b?: B }\n",
      'packages/worker/src/protocol/b.ts': "import type { A } from './a';\nexport interface B { a?: A }\n",
    };
    expect(await violations(typeCycle)).toEqual(['no-circular']);
  });

  it('lets no file stay in a circle, in any package', async () => {
    const circle = {
      ...sound,
      'packages/redis/src/redis-transport.ts': "import type { Lease } from './beat-lease';\nexport interface Transport { lease?: Lease }\n",
      'packages/redis/src/beat-lease.ts': "import type { Transport } from './redis-transport';\nexport interface Lease { t?: Transport }\n",
    };
    expect(await violations(circle)).toEqual(['no-circular']);
    const task = {
      ...sound,
      'packages/worker/src/task/task.ts': "import type { TaskContext } from './task-context';\nexport interface Task { fn?: (ctx: TaskContext) => void }\n",
      'packages/worker/src/task/task-context.ts': "import type { Task } from './task';\nexport interface TaskContext { task?: Task }\n",
    };
    expect(await violations(task)).toEqual(['no-circular']);
  });

  it('fails on two folders importing each other', async () => {
    const circle = {
      ...sound,
      'packages/dashboard/src/http/server.ts': "import type { View } from '../views/view';\nexport type Server = View;\n",
      'packages/dashboard/src/views/view.ts': "import type { Server } from '../http/server';\nexport interface View { s?: Server }\n",
    };
    expect(await violations(circle)).toContain('no-folder-circle');
  });

  it("fails on core importing the worker, and on a test reaching into another package's src/", async () => {
    const upward = { ...sound, 'packages/core/src/uses-worker.ts': "import type { App } from '../../worker/src/app/app';\nexport type A = App;\n" };
    expect(await violations(upward)).toEqual(['package-core']);
    const reaching = { ...sound, 'packages/worker/test/core.test.ts': "import { core } from '../../core/src/index';\nexport const c = core;\n" };
    expect(await violations(reaching)).toEqual(['test-reaches-into-another-package']);
  });

  it("docs/architecture.md draws @kq/worker's folders with the arrows the rule allows, and only those", () => {
    expect(drawnFolderArrows()).toEqual(allowedFolderArrows());
  });
});

/** Each `worker-<folder>` rule's allowed folders, read from its `pathNot` (`^packages/worker/src/(folder|a|b)/`). */
function allowedFolderArrows(): Record<string, string[]> {
  const arrows: Record<string, string[]> = {};
  for (const rule of config.forbidden ?? []) {
    const folder = /^worker-(?!unlisted-folder$)(.+)$/.exec(rule.name ?? '')?.[1];
    if (!folder) continue;
    const pathNot = 'to' in rule ? String(rule.to.pathNot) : '';
    const listed = /\(([^)]*)\)\/$/.exec(pathNot)?.[1]?.split('|') ?? [];
    arrows[folder] = listed.filter((name) => name !== folder).sort();
  }
  return arrows;
}

/** The drawing under "The layers of @kq/worker": a folder per line, its arrows after `→`, continued at that column. */
function drawnFolderArrows(): Record<string, string[]> {
  const text = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = text.slice(text.indexOf('### The layers of @kq/worker'));
  const drawing = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3));
  const arrows: Record<string, string[]> = {};
  let current: { folder: string; column: number } | undefined;
  for (const line of drawing.split('\n')) {
    const entry = /^ {2}([a-z]+) {2,}/.exec(line);
    if (entry?.[1]) {
      current = { folder: entry[1], column: line.indexOf('→') };
      arrows[current.folder] = [];
    }
    if (!current || current.column < 0) continue;
    const names = line.slice(current.column + 1).split(',').map((name) => name.trim()).filter(Boolean);
    arrows[current.folder]?.push(...names);
  }
  for (const folder of Object.keys(arrows)) arrows[folder]?.sort();
  return arrows;
}

