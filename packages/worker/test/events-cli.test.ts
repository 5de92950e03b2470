// `kq events` (live view and --dump), `kq status`, `kq inspect` / `kq control` output like Celery's CLI. Formatting
// is compared with what Celery 5.2.6 prints for the same input; the commands run in process on memory:// and, with
// Redis up, as real `kq` child processes.
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { App } from '../src/app/app';
import { commandArguments } from '../src/cli/remote-command-catalog';
import { formatReply, nodesOnline } from '../src/cli/reply-format';
import { runKq } from '../src/cli/run-kq';
import { startEventsMonitor } from '../src/cli/events-command';
import { clusterSteps } from '../src/cluster/cluster-steps';
import type { ReceivedEvent } from '../src/events/event';
import { EventDumper, formatUtc } from '../src/events/event-dump';
import type { Worker } from '../src/runtime/worker';
import { cleanRedisNamespace, memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqCli = fileURLToPath(new URL('../src/cli/kq.ts', import.meta.url));
const cliApp = fileURLToPath(new URL('./fixtures/cluster/cli-app.ts', import.meta.url));

/** A writable that keeps what it is given. */
function collector(tty = false): NodeJS.WritableStream & { text: () => string; isTTY: boolean; columns: number; rows: number } {
  let text = '';
  return {
    isTTY: tty,
    columns: 120,
    rows: 30,
    write(chunk: string | Uint8Array) {
      text += String(chunk);
      return true;
    },
    text: () => text,
  } as unknown as NodeJS.WritableStream & { text: () => string; isTTY: boolean; columns: number; rows: number };
}

describe('CLI output like Celery', () => {
  it('formats --dump lines exactly as celery events --dump does', () => {
    const dumper = new EventDumper();
    const lines = [
      { hostname: 'w1@probe', utcoffset: 0, pid: 7237, clock: 6, freq: 2.5, active: 0, processed: 1, loadavg: [1.16, 0.39, 0.14], sw_ident: 'py-celery', sw_ver: '5.2.6', sw_sys: 'Linux', timestamp: 1795266703.4884439, type: 'worker-heartbeat', local_received: 1795266703.5 },
      { hostname: 'w1@probe', utcoffset: 0, pid: 7237, clock: 2, uuid: '2de2', name: 'proj.add', args: '(2, 2)', kwargs: '{}', root_id: '2de2', parent_id: null, retries: 0, eta: null, expires: null, timestamp: 1795266701.4896047, type: 'task-received', local_received: 1795266701.5 },
      { hostname: 'w1@probe', utcoffset: 0, pid: 7237, clock: 5, uuid: '2de2', result: '4', runtime: 0.25, timestamp: 1795266701.5, type: 'task-succeeded', local_received: 1795266701.75 },
      { hostname: 'w1@probe', utcoffset: 0, pid: 7237, clock: 9, id: 'e1', timestamp: 1795266700.0, type: 'worker-elect-ack', local_received: 1795266700.25 },
    ].map((event) => dumper.format(event as ReceivedEvent));
    // Printed by celery.events.dumper.Dumper (5.2.6) for the same events.
    expect(lines).toEqual([
      'w1@probe [2026-11-21 13:11:43.488444] heartbeat: active=0, clock=6, freq=2.5, loadavg=[1.16, 0.39, 0.14], local_received=1795266703.5, pid=7237, processed=1, sw_ident=py-celery, sw_sys=Linux, sw_ver=5.2.6, utcoffset=0',
      'w1@probe [2026-11-21 13:11:41.489605] task received: proj.add(2de2) args=(2, 2) kwargs={} clock=2, eta=None, expires=None, local_received=1795266701.5, parent_id=None, pid=7237, retries=0, root_id=2de2, utcoffset=0',
      'w1@probe [2026-11-21 13:11:41.500000] task succeeded: proj.add(2de2) args=(2, 2) kwargs={} clock=5, local_received=1795266701.75, pid=7237, result=4, runtime=0.25, utcoffset=0',
      'w1@probe [2026-11-21 13:11:40] worker elect ack: clock=9, id=e1, local_received=1795266700.25, pid=7237, utcoffset=0',
    ]);
    expect(formatUtc(0)).toBe('1970-01-01 00:00:00');
  });

  it('prints remote-control replies as celery inspect / control do', () => {
    // Each expectation is what Celery 5.2.6's CLI printed for the same reply (no colour).
    expect(formatReply('w1@probe', { ok: 'pong' }, { showReply: true })).toBe('->  w1@probe: OK\n        pong');
    expect(formatReply('w1@probe', ['proj.add', 'proj.boom'], { showReply: true })).toBe('->  w1@probe: OK\n    * proj.add\n    * proj.boom');
    expect(formatReply('w1@probe', [], { showReply: true })).toBe('->  w1@probe: OK\n    - empty -');
    expect(formatReply('w1@probe', { error: "KeyError('x')" }, { showReply: true })).toBe("->  w1@probe: ERROR\n        KeyError('x')");
    expect(formatReply('w1@probe', { clock: 65, b: [1, 2] }, { showReply: true })).toBe(
      '->  w1@probe: OK\n    {\n        "b": [\n            1,\n            2\n        ],\n        "clock": 65\n    }',
    );
    expect(formatReply('w1@probe', null, { showReply: true })).toBe('->  w1@probe: OK\n    None');
    expect(formatReply('w1@probe', { ok: 'pong' })).toBe('->  w1@probe: OK');
    expect(nodesOnline(1)).toBe('\n1 node online.');
    expect(nodesOnline(3)).toBe('\n3 nodes online.');
  });

  it('exits with 69 and says so when no node replies', async () => {
    const broker = memoryBrokerName('cli-nobody');
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((message: unknown) => void errors.push(String(message)));
    try {
      expect(await runKq(['inspect', 'ping', '-b', `memory://${broker}`, '-d', 'nobody@nowhere', '-t', '0.2'])).toBe(69);
    } finally {
      spy.mockRestore();
    }
    expect(errors).toEqual(['Error: No nodes replied within time constraint']);
  });

  it("turns positional words into arguments by Celery's command signatures", () => {
    expect(commandArguments('revoke', ['a', 'b'])).toEqual({ task_id: ['a', 'b'] });
    expect(commandArguments('terminate', ['SIGKILL', 'a'])).toEqual({ signal: 'SIGKILL', task_id: ['a'] });
    expect(commandArguments('rate_limit', ['proj.add', '10/m'])).toEqual({ task_name: 'proj.add', rate_limit: '10/m' });
    expect(commandArguments('time_limit', ['proj.add', '10', '20.5'])).toEqual({ task_name: 'proj.add', soft: 10, hard: 20.5 });
    expect(commandArguments('add_consumer', ['extra'])).toEqual({ queue: 'extra' });
    expect(commandArguments('query_task', ['x'])).toEqual({ ids: ['x'] });
    expect(commandArguments('conf', ['true'])).toEqual({ with_defaults: true });
    expect(() => commandArguments('ping', ['oops'])).toThrow(/ping takes no arguments/);
    expect(() => commandArguments('pool_grow', ['two'])).toThrow(/not a whole number/);
  });
});

describe('kq events monitor (in process)', () => {
  let app: App;
  let worker: Worker;
  let broker: string;
  beforeAll(async () => {
    broker = memoryBrokerName('events-cli');
    app = memoryApp(broker, { workerSendTaskEvents: true });
    app.task('add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: 'view@test', logger: recordingLogger().logger, steps: clusterSteps({ heartbeatInterval: 0.1 }) });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await app.close();
  });

  it('shows workers and tasks as plain snapshots without a terminal, and dumps lines with --dump', async () => {
    const monitorApp = memoryApp(broker);
    const plain = collector(false);
    const dumped = collector(false);
    const view = await startEventsMonitor({ app: monitorApp, out: plain, frequency: 0.05 });
    const dump = await startEventsMonitor({ app: memoryApp(broker), out: dumped, dump: true });
    const result = await app.sendTask('add', [2, 3], {}, { taskId: 'view-task' });
    await result.get({ timeout: 5000 }).catch(() => undefined);
    await waitFor(() => view.state.tasks.get('view-task')?.state === 'SUCCESS', 5000, 'the task in the state');
    await waitFor(() => plain.text().includes('view-task'), 5000, 'a snapshot with the task');
    await view.stop();
    await dump.stop();
    await monitorApp.close();
    const snapshot = plain.text();
    expect(snapshot).not.toContain('\x1b[');
    expect(snapshot).toMatch(/view@test\s+ONLINE/);
    expect(snapshot).toMatch(/view-task\s+add\s+view@test\s+\S+\s+SUCCESS/);
    expect(dumped.text()).toMatch(/^-> evdump: starting capture\.\.\.\n/);
    expect(dumped.text()).toMatch(/view@test \[[^\]]+\] task received: add\(view-task\) args=\(2, 3\) kwargs=\{\} clock=\d+/);
    expect(dumped.text()).toMatch(/view@test \[[^\]]+\] task succeeded: add\(view-task\) args=\(2, 3\) kwargs=\{\} clock=\d+.*result=5/);
  });

  it('on a terminal, the arrow keys select a task, Enter opens its page (args, result, timeline), b goes back, q quits', async () => {
    const monitorApp = memoryApp(broker);
    const tty = collector(true);
    const keys = Object.assign(new PassThrough(), { isTTY: true, setRawMode: vi.fn() }) as unknown as NodeJS.ReadStream;
    let quit = false;
    const view = await startEventsMonitor({ app: monitorApp, out: tty, frequency: 0.05, input: keys, onQuit: () => (quit = true) });
    await app.sendTask('add', [20, 22], {}, { taskId: 'picked-task' });
    await waitFor(() => view.state.tasks.get('picked-task')?.state === 'SUCCESS', 5000, 'the task in the state');
    await waitFor(() => tty.text().includes('picked-task'), 5000, 'the task on screen');
    const screen = (): string => tty.text().split('\x1b[H\x1b[2J').pop() ?? '';
    keys.write('\x1b[B'); // down: the newest task row
    await waitFor(() => /^> picked-task/m.test(screen()), 5000, 'the row marked as selected');
    keys.write('\r');
    await waitFor(() => screen().startsWith('Task picked-task'), 5000, 'the task page');
    expect(screen()).toMatch(/^ {2}name {6}add$/m);
    expect(screen()).toMatch(/^ {2}args {6}\(20, 22\)$/m);
    expect(screen()).toMatch(/^ {2}result {4}42$/m);
    expect(screen()).toMatch(/^ {4}\S+ \S+ {2}received$/m);
    expect(screen()).toMatch(/^ {4}\S+ \S+ {2}succeeded$/m);
    keys.write('b');
    await waitFor(() => screen().startsWith('kq events'), 5000, 'the list again');
    keys.write('q');
    await waitFor(() => quit, 5000, 'q to quit');
    await view.stop();
    await monitorApp.close();
    expect(keys.setRawMode).toHaveBeenCalledWith(true);
    expect(keys.setRawMode).toHaveBeenLastCalledWith(false);
  });

  it('redraws in place on a terminal and restores the cursor when stopped', async () => {
    const monitorApp = memoryApp(broker);
    const tty = collector(true);
    const view = await startEventsMonitor({ app: monitorApp, out: tty, frequency: 0.02 });
    await waitFor(() => tty.text().split('\x1b[H\x1b[2J').length > 3, 5000, 'a few redraws');
    await view.stop();
    await monitorApp.close();
    expect(tty.text().startsWith('\x1b[?25l')).toBe(true);
    expect(tty.text().endsWith('\x1b[?25h\n')).toBe(true);
  });
});

const redisUp = await brokerReachable('redis');

describe.skipIf(!redisUp)('kq CLI child processes on Redis', () => {
  const broker = `${brokerUrls.redis}/10`;
  const ns = `kqcli${randomUUID().slice(0, 8)}`;
  const env = { ...process.env, KQ_CLI_BROKER: broker, KQ_CLI_NS: ns, NO_COLOR: '1' };
  let app: App;
  let worker: Worker;

  const kq = (args: string[], until?: (out: string) => boolean): Promise<{ code: number | null; out: string; err: string }> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', kqCli, ...args, '-A', cliApp], { cwd: repoRoot, env });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (until?.(out)) child.kill('SIGINT');
      });
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, out, err });
      });
    });

  beforeAll(async () => {
    app = new App('cli-worker', { broker, controlExchange: ns, eventExchange: `${ns}.ev` });
    app.task('add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `cli@${ns}`, queues: [`${ns}.q`], logger: recordingLogger().logger, steps: clusterSteps({ heartbeatInterval: 30 }) });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
    await app?.close();
    cleanRedisNamespace(10, ns);
  });

  it('kq status, kq inspect ping and kq control rate_limit print like Celery', async () => {
    const [status, ping, rate] = await Promise.all([
      kq(['status']),
      kq(['inspect', 'ping', '-d', `cli@${ns}`]),
      kq(['control', 'rate_limit', 'add', '5/s', '-d', `cli@${ns}`]),
    ]);
    expect(status.out).toBe(`->  cli@${ns}: OK\n\n1 node online.\n`);
    expect(ping.out).toBe(`->  cli@${ns}: OK\n        pong\n\n1 node online.\n`);
    expect(rate.out).toBe(`->  cli@${ns}: OK\n        new rate limit set successfully\n\n1 node online.\n`);
  });

  it('kq events --dump shows the worker at once (it asks for a heartbeat) and stops cleanly on SIGINT', async () => {
    const dump = await kq(['events', '--dump'], (out) => out.includes(`cli@${ns} [`));
    expect(dump.out).toMatch(/^-> evdump: starting capture\.\.\.\n/);
    expect(dump.out).toMatch(new RegExp(`cli@${ns} \\[[^\\]]+\\] heartbeat: clock=\\d+, freq=5, local_received=`));
    expect(dump.code).toBe(0);
  });

  it('kq events without a terminal prints snapshots instead of drawing, and exits on SIGINT', async () => {
    const view = await kq(['events', '-F', '0.2'], (out) => out.includes(`cli@${ns}`));
    expect(view.out).not.toContain('\x1b[');
    expect(view.out).toMatch(new RegExp(`cli@${ns}\\s+ONLINE`));
    expect(view.code).toBe(0);
  });
});
