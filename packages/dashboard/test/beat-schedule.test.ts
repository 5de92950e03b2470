// Periodic tasks on the dashboard: the beat leader announces its schedule (`beat-schedule` events) and the
// dashboard shows every entry with its last and next run, from whichever leader is current.
import { randomUUID } from 'node:crypto';
import { App, Beat, Logger } from '@kq/worker';
import { describe, expect, it } from 'vitest';
import { Dashboard } from '../src/index';

const quiet = new Logger('test', { level: 'critical', sink: () => undefined });

describe('beat entries on the dashboard', () => {
  it('lists each entry with its schedule, last run and next run, as the leader announced them', async () => {
    const broker = `memory://beat-dash-${randomUUID().slice(0, 6)}`;
    const app = new App('beat-dash', { broker });
    const beat = new Beat(app, {
      group: 'reports',
      schedule: [
        { name: 'tick', task: 'proj.tick', every: 0.5 },
        { name: 'nightly', task: 'proj.report', cron: '0 3 * * *', timezone: 'UTC' },
      ],
      logger: quiet,
    });
    const dashboard = new Dashboard({ app: new App('dash', { broker }), port: 0, logger: quiet });
    await dashboard.start();
    await beat.start();
    try {
      const deadline = Date.now() + 10_000;
      let tick: { last_run: number | null; next_run: number | null } | undefined;
      while (Date.now() < deadline) {
        tick = dashboard.state.beats.get('reports')?.entries.find((entry) => entry.name === 'tick');
        if (tick?.last_run) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const schedule = dashboard.state.beats.get('reports');
      expect(schedule?.epoch).toBeGreaterThan(0);
      expect(schedule?.entries.map((entry) => [entry.name, entry.task, entry.schedule])).toEqual([
        ['tick', 'proj.tick', expect.stringContaining('0.5')],
        ['nightly', 'proj.report', expect.stringContaining('0 3 * * *')],
      ]);
      expect(tick?.last_run).toEqual(expect.any(Number));
      expect(tick?.next_run).toBeGreaterThan(tick?.last_run ?? Infinity);
      const nightly = schedule?.entries.find((entry) => entry.name === 'nightly');
      expect(new Date((nightly?.next_run ?? 0) * 1000).toISOString()).toMatch(/T03:00:00\.000Z$/);
      const overview = (await (await fetch(`${dashboard.url}/dashboard/overview`)).json()) as { beats: Array<{ group: string }> };
      expect(overview.beats.map((b) => b.group)).toEqual(['reports']);
    } finally {
      await beat.stop();
      await dashboard.close();
      await dashboard.app.close();
      await app.close();
    }
  }, 30_000);
});
