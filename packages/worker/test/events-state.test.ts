// The monitor's cluster State (celery/events/state.py): liveness by the 2 × freq heartbeat rule, node join/leave,
// task merge rules for out-of-order events, and the timeline ordered by Lamport clock.
import { describe, expect, it } from 'vitest';
import { ClusterState, statePrecedence } from '../src/events/cluster-state';
import type { ReceivedEvent } from '../src/events/event';

let now = 1_000_000;
const event = (type: string, fields: Record<string, unknown> = {}): ReceivedEvent =>
  ({ hostname: 'w1@h', utcoffset: 0, pid: 10, clock: 1, timestamp: now, local_received: now, ...fields, type }) as ReceivedEvent;

describe('ClusterState', () => {
  it('keeps a worker alive while now < last heartbeat + 2 × freq, and forgets it when it goes offline', () => {
    const state = new ClusterState();
    const joins: string[] = [];
    const leaves: string[] = [];
    state.on('node-join', (w) => joins.push(w.hostname));
    state.on('node-leave', (w) => leaves.push(w.hostname));
    now += 10;
    state.event(event('worker-online', { freq: 2.0, active: 0, processed: 0, loadavg: [0.1, 0.2, 0.3], sw_ident: 'py-celery' }));
    const worker = state.workers.get('w1@h');
    expect(worker?.isAlive(now + 3.99)).toBe(true);
    expect(worker?.isAlive(now + 4)).toBe(false);
    expect(worker).toMatchObject({ freq: 2, active: 0, processed: 0, pid: 10 });
    now += 3;
    state.event(event('worker-heartbeat', { freq: 2.0, active: 1, processed: 5, clock: 9 }));
    expect(worker?.isAlive(now + 3.9)).toBe(true);
    expect(worker?.heartbeats).toHaveLength(2);
    expect(state.aliveWorkers(now).map((w) => w.hostname)).toEqual(['w1@h']);
    for (let i = 0; i < 6; i++) state.event(event('worker-heartbeat', { local_received: now + i }));
    expect(worker?.heartbeats).toHaveLength(4); // Celery keeps the last four
    state.event(event('worker-offline'));
    expect(state.workers.has('w1@h')).toBe(false);
    expect(joins).toEqual(['w1@h']);
    expect(leaves).toEqual(['w1@h']);
    // An offline event from an unknown worker creates nothing.
    state.event(event('worker-offline', { hostname: 'ghost@h' }));
    expect(state.workers.size).toBe(0);
  });

  it('reports drift between a heartbeat timestamp and its receipt of more than 16 s', () => {
    const state = new ClusterState();
    const drifts: number[] = [];
    state.on('drift', (_w, drift) => drifts.push(drift));
    state.event(event('worker-heartbeat', { timestamp: now - 20, local_received: now }));
    expect(drifts).toEqual([20]);
  });

  it("merges task events by Celery's precedence: a late task-received only fills in its fields", () => {
    const state = new ClusterState();
    state.event(event('task-started', { uuid: 't1', clock: 5 }));
    state.event(event('task-succeeded', { uuid: 't1', clock: 6, result: '4', runtime: 0.1 }));
    state.event(event('task-received', { uuid: 't1', clock: 4, name: 'proj.add', args: '(2, 2)', kwargs: '{}', retries: 0, eta: null, expires: null, root_id: 't1', parent_id: null }));
    const task = state.tasks.get('t1');
    expect(task?.state).toBe('SUCCESS');
    expect(task?.fields).toMatchObject({ name: 'proj.add', args: '(2, 2)', result: '4', clock: 6 });
    expect(task?.events.map((e) => e.type)).toEqual(['task-received', 'task-started', 'task-succeeded']);
    expect(task?.worker).toBe('w1@h');
    expect(Object.keys(task?.times ?? {})).toEqual(['started', 'succeeded', 'received']);
    // RETRY is never out of order: a retried task can be received again.
    state.event(event('task-retried', { uuid: 't2', clock: 10, exception: "ValueError('x')" }));
    state.event(event('task-received', { uuid: 't2', clock: 11, name: 'proj.flaky' }));
    expect(state.tasks.get('t2')?.state).toBe('RECEIVED');
    expect(statePrecedence('SUCCESS')).toBeLessThan(statePrecedence('RECEIVED'));
    expect(statePrecedence('CUSTOM')).toBe(statePrecedence('WHATEVER'));
  });

  it('records the client of task-sent, counts task events as worker activity, and lists tasks by time', () => {
    const state = new ClusterState();
    now += 100;
    state.event(event('task-sent', { uuid: 'a', clock: 1, hostname: 'gen42@h', name: 'proj.add' }));
    state.event(event('task-received', { uuid: 'a', clock: 3, hostname: 'w2@h' }));
    state.event(event('task-received', { uuid: 'b', clock: 2, hostname: 'w2@h' }));
    state.event(event('task-succeeded', { uuid: 'b', clock: 7, hostname: 'w2@h' }));
    expect(state.tasks.get('a')?.client).toBe('gen42@h');
    expect(state.workers.get('w2@h')?.heartbeats.length).toBeGreaterThan(0);
    expect(state.workers.has('gen42@h')).toBe(false);
    expect(state.tasksByTime().map((t) => t.uuid)).toEqual(['b', 'a']);
    expect(state.taskCount).toBe(2);
    expect(state.eventCount).toBe(4);
  });

  it('keeps at most maxTasks tasks', () => {
    const state = new ClusterState({ maxTasks: 2 });
    for (const uuid of ['a', 'b', 'c']) state.event(event('task-received', { uuid, clock: 1 }));
    expect([...state.tasks.keys()]).toEqual(['b', 'c']);
    expect(state.tasksByTime().map((t) => t.uuid)).toEqual(['c', 'b']);
  });
});
