// The dashboard's own bookkeeping: Flower's task query, the per-second series (ring buffers), percentiles.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { queryTasks, queryableFlowerTask, type FlowerTask } from '../src/task-view';
import { QueueLengthSeries, ThroughputSeries, percentile } from '../src/time-series';

const task = (uuid: string, extra: Partial<FlowerTask>): FlowerTask => ({
  uuid,
  name: 'proj.add',
  state: 'SUCCESS',
  received: null,
  sent: null,
  started: null,
  rejected: null,
  succeeded: null,
  failed: null,
  retried: null,
  revoked: null,
  args: '(1, 2)',
  kwargs: '{}',
  eta: null,
  expires: null,
  retries: 0,
  worker: 'w1@host',
  result: '3',
  exception: null,
  timestamp: null,
  runtime: 0.01,
  traceback: null,
  exchange: null,
  routing_key: null,
  clock: 0,
  client: null,
  root_id: null,
  parent_id: null,
  children: [],
  ...extra,
});

describe("Flower's /api/tasks query", () => {
  const tasks = [
    task('a', { received: Date.parse('2026-01-01T10:00:00Z') / 1000, name: 'proj.add' }),
    task('b', { received: Date.parse('2026-01-01T11:00:00Z') / 1000, name: 'proj.mul', state: 'FAILURE', exception: "ValueError('boom')", worker: 'w2@host' }),
    task('c', { received: Date.parse('2026-01-01T12:00:00Z') / 1000, name: 'proj.add', args: '(40, 2)', result: '42' }),
  ].map(queryableFlowerTask);

  it('filters by worker, task name and state ("All" is no filter), and by received time (Flower\'s naive UTC minutes or ISO 8601 with an offset)', () => {
    expect(queryTasks(tasks, { workername: 'w2@host' }).map((t) => t.uuid)).toEqual(['b']);
    expect(queryTasks(tasks, { taskname: 'proj.add', state: 'All' }).map((t) => t.uuid)).toEqual(['a', 'c']);
    expect(queryTasks(tasks, { state: 'FAILURE' }).map((t) => t.uuid)).toEqual(['b']);
    expect(queryTasks(tasks, { receivedStart: '2026-01-01 10:30', receivedEnd: '2026-01-01 11:30' }).map((t) => t.uuid)).toEqual(['b']);
    expect(queryTasks(tasks, { receivedStart: '2026-01-01T11:30+01:00', receivedEnd: '2026-01-01T12:30:00+01:00' }).map((t) => t.uuid)).toEqual(['b']);
  });

  it('searches words anywhere or in one field (args:, result:, ...), every word must match', () => {
    expect(queryTasks(tasks, { search: 'boom' }).map((t) => t.uuid)).toEqual(['b']);
    expect(queryTasks(tasks, { search: 'args:40 result:42' }).map((t) => t.uuid)).toEqual(['c']);
    expect(queryTasks(tasks, { search: 'args:40 result:3' })).toEqual([]);
  });

  it('sorts (- for descending) and pages', () => {
    expect(queryTasks(tasks, { sortBy: '-received' }).map((t) => t.uuid)).toEqual(['c', 'b', 'a']);
    expect(queryTasks(tasks, { sortBy: 'name', limit: 1, offset: 1 }).map((t) => t.uuid)).toEqual(['c']);
  });
});

describe('per-second series', () => {
  it('counts finished tasks per second and forgets seconds older than its window, whatever the order of events', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ at: fc.integer({ min: 0, max: 50 }), ok: fc.boolean() }), { maxLength: 200 }), (events) => {
        const series = new ThroughputSeries(10);
        for (const { at, ok } of [...events].sort((a, b) => a.at - b.at)) series.record(ok ? 'succeeded' : 'failed', 1000 + at, 0.1);
        const points = series.points(1050);
        expect(points.map((p) => p.t)).toEqual(Array.from({ length: 10 }, (_, i) => 1041 + i));
        for (const point of points) {
          const at = events.filter((e) => 1000 + e.at === point.t);
          expect(point.succeeded).toBe(at.filter((e) => e.ok).length);
          expect(point.failed).toBe(at.filter((e) => !e.ok).length);
        }
      }),
    );
  });

  it('gives nearest-rank percentiles', () => {
    expect(percentile([], 0.5)).toBeNull();
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(percentile([1, 2, 3, 4], 0.99)).toBe(4);
  });

  it('keeps the last N queue samples, oldest first', () => {
    const series = new QueueLengthSeries(3);
    for (let i = 0; i < 5; i++) series.record(i, { q: i });
    expect(series.samples().map((s) => s.t)).toEqual([2, 3, 4]);
    expect(series.latest()).toEqual({ q: 4 });
  });
});

describe('a burst of 100 000 tasks', () => {
  it('keeps the state bounded (max tasks), answers a page of the newest, and counts every event', async () => {
    const { FleetState } = await import('../src/fleet-state');
    const state = new FleetState({ maxTasks: 10_000 });
    const base = 1_800_000_000;
    let clock = 0;
    for (let i = 0; i < 100_000; i++) {
      const uuid = `t-${i}`;
      const common = { uuid, hostname: 'w1@host', local_received: base + i / 1000, utcoffset: 0, pid: 1 };
      state.event({ ...common, type: 'task-received', name: 'proj.add', args: `(${i}, 1)`, kwargs: '{}', timestamp: base + i / 1000, clock: ++clock, ...(i > 0 ? { parent_id: `t-${i - 1}` } : {}) } as never);
      state.event({ ...common, type: 'task-started', timestamp: base + i / 1000, clock: ++clock } as never);
      state.event({ ...common, type: 'task-succeeded', result: String(i + 1), runtime: 0.001, timestamp: base + i / 1000, clock: ++clock } as never);
    }
    expect(state.cluster.tasks.size).toBe(10_000);
    expect(state.cluster.eventCount).toBe(300_000);
    const page = state.queryTasks({ limit: 50 });
    expect(page).toHaveLength(50);
    expect(page[0]).toMatchObject({ uuid: 't-99999', state: 'SUCCESS', result: '100000', children: [] });
    expect(state.task('t-99998')?.children).toEqual(['t-99999']);
    expect(state.queryTasks({ search: 'args:(95000,', limit: 5 }).map((t) => t.uuid)).toEqual(['t-95000']);
    expect(state.cluster.tasksByTime(3).map((t) => t.uuid)).toEqual(['t-99999', 't-99998', 't-99997']);
  }, 60_000);
});

describe('the state file (Flower\'s --persistent)', () => {
  it('saves the tasks and workers seen and reads them back into a new state, as they were', async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { FleetState } = await import('../src/fleet-state');
    const { loadFleetState, saveFleetState } = await import('../src/state-file');
    const before = new FleetState();
    const now = Date.now() / 1000;
    const base = { hostname: 'w1@host', utcoffset: 0, pid: 7 };
    before.event({ ...base, type: 'worker-online', timestamp: now, local_received: now, clock: 1, freq: 2, sw_ident: 'kq' } as never);
    before.event({ ...base, type: 'task-received', uuid: 'p', name: 'proj.parent', args: '()', kwargs: '{}', timestamp: now, local_received: now, clock: 2 } as never);
    before.event({ ...base, type: 'task-received', uuid: 'c', name: 'proj.child', args: '(1,)', kwargs: '{}', parent_id: 'p', root_id: 'p', timestamp: now, local_received: now, clock: 3 } as never);
    before.event({ ...base, type: 'task-failed', uuid: 'c', exception: "ValueError('x')", traceback: 'Traceback…', timestamp: now + 1, local_received: now + 1, clock: 4 } as never);
    const file = join(mkdtempSync(join(tmpdir(), 'kq-dash-state-')), 'sub', 'state.json');
    await saveFleetState(before, file);
    const after = new FleetState();
    expect(await loadFleetState(after, file)).toBeGreaterThan(3);
    expect(after.task('c')).toEqual(before.task('c'));
    expect(after.task('p')?.children).toEqual(['c']);
    expect(after.cluster.workers.get('w1@host')?.isAlive(now + 1)).toBe(true);
    expect(await loadFleetState(new FleetState(), join(file, 'missing'))).toBe(0);
  });
});
