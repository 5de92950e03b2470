/**
 * The app's one contract, checked by the compiler (`pnpm lint:types` compiles the tests): the App is an
 * `AppContract<TypedTasks>` whose registry gives back `Task`s, a task and its context see the plain `AppContract`,
 * the canvas takes a `Pick` of it, and the names the three interfaces had stay as aliases of the one.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { App } from '../src/app/app';
import type { AppContract, CanvasApp, CanvasAppView, TaskApp, Task, TaskContext, TypedTasks } from '../src/index';

const app = new App('contract-types', { broker: 'memory://contract-types' });
const double = app.task('contract.double', (_ctx, x: number) => x * 2);

describe('AppContract', () => {
  it('is what the App is, with its tasks typed, and what tasks and the canvas see of it', () => {
    const contract: AppContract<TypedTasks> = app;
    expectTypeOf(contract.tasks.get('contract.double')).toEqualTypeOf<Task<never[], unknown> | undefined>();
    expectTypeOf(contract.task('contract.triple', (_ctx, x: number) => x * 3)).toEqualTypeOf<Task<[x: number], number, never>>();
    expectTypeOf(double.app).toEqualTypeOf<AppContract>();
    expectTypeOf<TaskContext['app']>().toEqualTypeOf<AppContract>();
    const view: CanvasAppView = contract;
    // @ts-expect-error — the canvas needs the app's revoker
    const partial: CanvasAppView = { threadOid: view.threadOid, conf: view.conf, sendTaskMessage: view.sendTaskMessage, backend: view.backend, withTaskDefaults: view.withTaskDefaults, routeQueue: view.routeQueue };
    expect(partial).toBeDefined();
    expect(contract.tasks.get('contract.triple')?.name).toBe('contract.triple');
  });

  it('keeps the names of the interfaces it replaced, as aliases of it', () => {
    expectTypeOf<TaskApp>().toEqualTypeOf<AppContract>();
    expectTypeOf<CanvasApp>().toEqualTypeOf<CanvasAppView>();
  });
});
