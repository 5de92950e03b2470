// Which inspect calls the dashboard's rounds ask: what changes while a worker runs every round; `registered`, `conf`
// and `active_queues` on the first round, every `fullRoundEvery`th, after a consumer change, for a newcomer and on
// `?refresh=1`. Each method asked costs every worker a reply.
import { App, Logger } from '@kq/worker';
import { describe, expect, it } from 'vitest';
import { CHANGING_METHODS, Dashboard, FleetState, INSPECT_METHODS, WorkerInspector } from '../src/index';

/** An app whose broadcasts one worker answers at once; records the methods asked, one list per call site turn. */
function answeringApp(): { app: App; asked: string[] } {
  const asked: string[] = [];
  const app = {
    control: {
      broadcast: async (method: string) => {
        asked.push(method);
        return [{ 'w1@host': method === 'registered' ? ['add'] : {} }];
      },
    },
  } as unknown as App;
  return { app, asked };
}

const sorted = (methods: readonly string[]): string[] => [...methods].sort();

describe('the inspect rounds', () => {
  it('ask every method on the first round and every fullRoundEvery-th, the changing ones between', async () => {
    const { app, asked } = answeringApp();
    const inspector = new WorkerInspector(app, new FleetState(), 100, { fullRoundEvery: 3 });
    const rounds: string[][] = [];
    for (let round = 0; round < 7; round++) {
      asked.length = 0;
      expect(await inspector.round()).toEqual(new Set(['w1@host']));
      rounds.push(sorted(asked));
    }
    const all = sorted(INSPECT_METHODS);
    const changing = sorted(CHANGING_METHODS);
    expect(rounds).toEqual([all, changing, changing, all, changing, changing, all]);
    expect(changing).not.toContain('registered');
    expect(changing).not.toContain('conf');
    expect(changing).not.toContain('active_queues');
  });

  it('ask active_queues on the round after a consumer change, and everything on a direct inspect', async () => {
    const { app, asked } = answeringApp();
    const inspector = new WorkerInspector(app, new FleetState(), 100, { fullRoundEvery: 10 });
    await inspector.round();
    asked.length = 0;
    inspector.queuesChanged();
    await inspector.round();
    expect(sorted(asked)).toEqual(sorted([...CHANGING_METHODS, 'active_queues']));
    asked.length = 0;
    await inspector.round();
    expect(sorted(asked)).toEqual(sorted(CHANGING_METHODS));
    asked.length = 0;
    expect(await inspector.inspect('w1@host')).toEqual(new Set(['w1@host']));
    expect(sorted(asked)).toEqual(sorted(INSPECT_METHODS));
    asked.length = 0;
    expect(await inspector.inspectNewcomer('w1@host')).toBe(true);
    expect(sorted(asked)).toEqual(sorted(INSPECT_METHODS));
  });

  it('keep what a partial round did not ask from the round before', async () => {
    const { app } = answeringApp();
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 10 });
    await inspector.round();
    await inspector.round();
    expect(state.inspected.get('w1@host')?.['registered']).toEqual(['add']);
    expect(Object.keys(state.inspected.get('w1@host') ?? {}).sort()).toEqual(sorted([...INSPECT_METHODS, 'timestamp']));
  });

  it('in a dashboard, ask registered and conf every inspectSteadyIntervalMs, the changing methods every inspectIntervalMs', async () => {
    const app = new App('dash-schedule', { broker: 'memory://' });
    const asked: string[] = [];
    const broadcast = app.control.broadcast.bind(app.control);
    app.control.broadcast = ((method: string, options?: Parameters<typeof broadcast>[1]) => {
      asked.push(method);
      return broadcast(method, options);
    }) as typeof app.control.broadcast;
    const quiet = new Logger('test', { level: 'critical', sink: () => undefined });
    const dashboard = new Dashboard({ app, port: 0, logger: quiet, inspectTimeoutMs: 20, inspectIntervalMs: 100, inspectSteadyIntervalMs: 400 });
    await dashboard.start();
    const count = (method: string): number => asked.filter((name) => name === method).length;
    try {
      // Seven rounds, however long the shared machine takes to run them.
      for (let waited = 0; count('stats') < 7 && waited < 20_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await dashboard.close();
      await app.close();
    }
    // inspectSteadyIntervalMs / inspectIntervalMs = 4: rounds 0, 4, 8… ask everything (0 and 4 of the first seven).
    const rounds = count('stats');
    expect(rounds).toBeGreaterThanOrEqual(7);
    expect(count('registered')).toBe(Math.ceil(rounds / 4));
    expect(count('conf')).toBe(Math.ceil(rounds / 4));
    expect(count('active_queues')).toBe(Math.ceil(rounds / 4));
  });
});
