// What the dashboard keeps of a worker's inspect replies has its secrets masked, whatever the worker masked itself:
// Python Celery's `stats` gives the broker's transport options and alternate URLs as configured.
import type { App } from '@kq/worker';
import { describe, expect, it } from 'vitest';
import { FleetState, WorkerInspector } from '../src/index';

describe('inspect replies the dashboard keeps', () => {
  it("mask passwords in stats' broker description and in conf", async () => {
    const replies: Record<string, unknown> = {
      stats: {
        pid: 42,
        broker: { hostname: '127.0.0.1', transport_options: { visibility_timeout: 3600, sentinel_kwargs: { password: 'hunter2' } }, alternates: ['redis://:hunter2@10.0.0.2:6379/0'] },
      },
      conf: { broker_url: 'redis://:hunter2@127.0.0.1:6379/0', broker_transport_options: { password: 'hunter2' }, worker_concurrency: 4 },
    };
    const app = { control: { broadcast: async (method: string) => [{ 'py@host': replies[method] ?? [] }] } } as unknown as App;
    const state = new FleetState();
    await new WorkerInspector(app, state, 100).inspect();
    const info = state.inspected.get('py@host');
    expect(JSON.stringify(info)).not.toContain('hunter2');
    expect(info?.['stats']).toEqual({
      pid: 42,
      broker: { hostname: '127.0.0.1', transport_options: { visibility_timeout: 3600, sentinel_kwargs: { password: '********' } }, alternates: ['redis://:**@10.0.0.2:6379/0'] },
    });
    expect(info?.['conf']).toEqual({ broker_url: 'redis://:**@127.0.0.1:6379/0', broker_transport_options: { password: '********' }, worker_concurrency: 4 });
  });
});
