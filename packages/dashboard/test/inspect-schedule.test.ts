// Which inspect calls the dashboard's rounds ask: what changes while a worker runs every round; `registered`, `conf`
// and `active_queues` on the first round, every `fullRoundEvery`th, after a consumer change, for a newcomer and on
// `?refresh=1`. Each method asked costs every worker a reply.
import { App, Logger } from '@kq/worker';
import { describe, expect, it } from 'vitest';
import { CHANGING_METHODS, Dashboard, FleetState, INSPECT_METHODS, WorkerInspector } from '../src/index';

/**
 * An app whose broadcasts the workers `hosts` answer at once (those of the destination list, when one is given);
 * records the methods asked and each broadcast's destination.
 */
function answeringApp(hosts: readonly string[] = ['w1@host']): { app: App; asked: string[]; destinations: Array<string[] | undefined> } {
  const asked: string[] = [];
  const destinations: Array<string[] | undefined> = [];
  const app = {
    control: {
      broadcast: async (method: string, options: { destination?: string[] } = {}) => {
        asked.push(method);
        destinations.push(options.destination);
        return hosts.filter((host) => !options.destination || options.destination.includes(host)).map((host) => ({ [host]: method === 'registered' ? ['add'] : {} }));
      },
    },
  } as unknown as App;
  return { app, asked, destinations };
}

/** A heartbeat from `hostname` as the event receiver hands it to the state (alive for 2 × freq from now). */
function heartbeat(state: FleetState, hostname: string, processed: number, active = 0, type = 'worker-heartbeat'): void {
  const now = Date.now() / 1000;
  state.event({ type, hostname, timestamp: now, local_received: now, clock: 0, freq: 2, active, processed } as never);
}

const sorted = (methods: readonly string[]): string[] => [...methods].sort();

describe('the inspect rounds', () => {
  it('ask every method on the first round and every fullRoundEvery-th, the changing ones between', async () => {
    const { app, asked } = answeringApp();
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 3 });
    const rounds: string[][] = [];
    for (let round = 0; round < 7; round++) {
      // The worker ran a task since the round before: a round between full ones asks it.
      heartbeat(state, 'w1@host', round);
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
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 10 });
    heartbeat(state, 'w1@host', 0);
    await inspector.round();
    asked.length = 0;
    inspector.queuesChanged();
    heartbeat(state, 'w1@host', 1);
    await inspector.round();
    expect(sorted(asked)).toEqual(sorted([...CHANGING_METHODS, 'active_queues']));
    asked.length = 0;
    heartbeat(state, 'w1@host', 2);
    await inspector.round();
    expect(sorted(asked)).toEqual(sorted(CHANGING_METHODS));
    asked.length = 0;
    expect(await inspector.inspect('w1@host')).toEqual(new Set(['w1@host']));
    expect(sorted(asked)).toEqual(sorted(INSPECT_METHODS));
    asked.length = 0;
    expect(await inspector.inspectNewcomer('w1@host')).toBe(true);
    expect(sorted(asked)).toEqual(sorted(INSPECT_METHODS));
  });

  it('ask newcomers that come online while one is asked together, in one destination list', async () => {
    const hosts = ['w1@host', 'w2@host', 'w3@host', 'w4@host'];
    const { app, asked, destinations } = answeringApp(hosts);
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100);
    // w1 is asked at once; w2, w3 and w4 come online while it is, and are asked together once it has answered.
    const first = inspector.inspectNewcomer('w1@host');
    await Promise.resolve();
    const others = ['w2@host', 'w3@host', 'w4@host'].map((host) => inspector.inspectNewcomer(host));
    expect(await Promise.all([first, ...others])).toEqual([true, true, true, true]);
    expect(asked.length).toBe(2 * INSPECT_METHODS.length);
    expect(new Set(destinations.map((destination) => destination?.join(',')))).toEqual(new Set(['w1@host', 'w2@host,w3@host,w4@host']));
  });

  it('keep what a partial round did not ask from the round before', async () => {
    const { app } = answeringApp();
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 10 });
    heartbeat(state, 'w1@host', 0);
    await inspector.round();
    heartbeat(state, 'w1@host', 1);
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
      // Seven rounds, however long the shared machine takes to run them; a worker whose heartbeats keep moving, so
      // that every round asks.
      for (let waited = 0; count('stats') < 7 && waited < 20_000; waited += 50) {
        heartbeat(dashboard.state, 'w1@host', waited);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
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

  it('between full rounds, ask only the workers whose heartbeats or events moved since they answered, and nobody when none did', async () => {
    const hosts = ['w1@host', 'w2@host', 'w3@host'];
    const { app, asked, destinations } = answeringApp(hosts);
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 100 });
    for (const host of hosts) heartbeat(state, host, 0);
    expect(await inspector.round()).toEqual(new Set(hosts));
    const nextRound = async (): Promise<Array<string[] | undefined>> => {
      asked.length = 0;
      destinations.length = 0;
      await inspector.round();
      return destinations;
    };

    // An idle fleet (heartbeats that say the same): no broadcast at all.
    for (const host of hosts) heartbeat(state, host, 0);
    expect(await nextRound()).toEqual([]);

    // w2 processed a task (its heartbeat says so): only w2 is asked, every changing method.
    heartbeat(state, 'w2@host', 1);
    expect(await nextRound()).toEqual(CHANGING_METHODS.map(() => ['w2@host']));
    expect(sorted(asked)).toEqual(sorted(CHANGING_METHODS));
    expect(await nextRound()).toEqual([]);

    // w3 received a task (an event, its heartbeat's counts unchanged) and w1 has one running.
    state.event({ type: 'task-received', uuid: 't-1', name: 'proj.add', hostname: 'w3@host', timestamp: Date.now() / 1000, local_received: Date.now() / 1000, clock: 1 } as never);
    heartbeat(state, 'w1@host', 0, 1);
    expect(new Set((await nextRound()).map((destination) => destination?.join(',')))).toEqual(new Set(['w1@host,w3@host']));

    // The dashboard commanded w1 (its answers may differ though nothing it sends says so).
    inspector.changed('w1@host');
    expect(await nextRound()).toEqual(CHANGING_METHODS.map(() => ['w1@host']));

    // Everyone moved (a revoke to all): one broadcast per method without a destination list.
    inspector.changed();
    expect(await nextRound()).toEqual(CHANGING_METHODS.map(() => undefined));

    // A worker gone offline is not asked.
    heartbeat(state, 'w2@host', 0, 0, 'worker-offline');
    inspector.changed('w2@host');
    heartbeat(state, 'w1@host', 5);
    expect(await nextRound()).toEqual(CHANGING_METHODS.map(() => ['w1@host']));
  });

  it('ask again a worker that did not answer every call', async () => {
    const { app, destinations } = answeringApp(['w1@host']);
    const state = new FleetState();
    const inspector = new WorkerInspector(app, state, 100, { fullRoundEvery: 100 });
    heartbeat(state, 'w1@host', 0);
    heartbeat(state, 'w2@host', 0);
    expect(await inspector.round()).toEqual(new Set(['w1@host']));
    destinations.length = 0;
    await inspector.round();
    expect(destinations).toEqual(CHANGING_METHODS.map(() => ['w2@host']));
    destinations.length = 0;
    await inspector.round();
    expect(destinations).toEqual(CHANGING_METHODS.map(() => ['w2@host']));
  });
});
