/**
 * Canvas across languages (issue 17): every canvas form, built by Python Celery 5 and by kq, with steps pinned to kq
 * workers and to Python workers, on Redis and on RabbitMQ (Redis result backend: chords need a join); rpc:// refuses
 * chords as Celery does.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerReachable, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Chunks, MapSignature, type Signature, chain, chord, group } from '../src/canvas/index';
import { ChordError, TaskFailedError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient, startPythonWorker, type PythonOutcome } from './fixtures/python-client';

const python = await pythonAvailable(['celery']);

const setups = [
  { kind: 'redis' as const, broker: 'redis://127.0.0.1:6379/8', pyBroker: 'redis://127.0.0.1:6379/8' },
  { kind: 'amqp' as const, broker: 'amqp://guest:guest@127.0.0.1:5672', pyBroker: 'amqp://guest:guest@127.0.0.1:5672//' },
];
const backend = 'redis://127.0.0.1:6379/8';

for (const setup of setups) {
  const up = (await brokerReachable(setup.kind, setup.broker)) && (await brokerReachable('redis', backend));
  describe.skipIf(!up || !python)(`canvas with Python Celery on ${setup.kind}`, { timeout: 60_000 }, () => {
    const ns = `kqc${randomUUID().slice(0, 8)}`;
    const kqQueue = `${ns}.kq`;
    const pyQueue = `${ns}.py`;
    const marker = join(tmpdir(), `${ns}.marks`);
    const env = {
      KQ_INTEROP_BROKER: setup.pyBroker,
      KQ_INTEROP_BACKEND: backend,
      KQ_INTEROP_PY_QUEUE: pyQueue,
      KQ_INTEROP_KQ_QUEUE: kqQueue,
      KQ_INTEROP_NAMESPACE: ns,
      KQ_INTEROP_MARKER: marker,
    };
    let app: App;
    let worker: Worker;
    let pythonWorker: ChildProcess;

    const fromPython = (name: string): Promise<PythonOutcome> => runPythonClient('canvas_client.py', { case: name, timeout: 30 }, env);
    const marks = (): string[] => {
      try {
        return readFileSync(marker, 'utf8').trim().split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };
    const kq = (name: string, ...args: unknown[]): Signature => app.signature(`interop.kq_${name}`, args, {}, { queue: kqQueue });
    const py = (name: string, ...args: unknown[]): Signature => app.signature(`interop.py_${name}`, args, {}, { queue: pyQueue });

    beforeAll(async () => {
      app = new App('canvas-interop', { broker: setup.broker, backend, controlExchange: ns, taskDefaultQueue: kqQueue, resultExpires: 600 });
      app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
      app.task('interop.kq_mul', (_ctx, x: number, y: number) => x * y);
      app.task('interop.kq_tsum', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
      app.task('interop.kq_fail', () => {
        throw new RangeError('kq says no');
      });
      app.task('interop.kq_replace_with_py', (ctx, x: number) => ctx.replace(chain(py('add', x, 1), py('mul', 2))));
      app.task('interop.kq_spawn', async (_ctx, n: number) => {
        for (let i = 0; i < n; i += 1) await app.sendTask('interop.py_add', [i, i], {}, { queue: pyQueue });
        return n;
      });
      app.task('interop.kq_errback', (_ctx, taskId: string) => {
        appendFileSync(marker, `kq ${taskId}\n`);
        return taskId;
      });
      worker = app.worker({ hostname: `kq@${ns}`, concurrency: 8, logger: new Logger('canvas', { level: 'critical', sink: () => undefined }) });
      await worker.start();
      pythonWorker = startPythonWorker(`py@${ns}`, env);
    });

    afterAll(async () => {
      pythonWorker?.kill('SIGKILL');
      await worker?.stop({ cold: true });
      await app?.close();
    });

    describe('built by Python', () => {
      it('a chain crosses languages step by step', async () => {
        expect(await fromPython('chain')).toMatchObject({ status: 'SUCCESS', result: 80 });
      });
      it('a group gives every member result in order', async () => {
        expect(await fromPython('group')).toMatchObject({ result: [2, 4, 6] });
      });
      it('a chord whose header runs on both sides runs its kq body once', async () => {
        expect(await fromPython('chord')).toMatchObject({ status: 'SUCCESS', result: 40 });
      });
      it('a chord whose kq header completes a Python body', async () => {
        expect(await fromPython('chord_py_body')).toMatchObject({ status: 'SUCCESS', result: 30 });
      });
      it('a group followed by a task in a chain is upgraded to a chord', async () => {
        expect(await fromPython('chain_group_upgrade')).toMatchObject({ status: 'SUCCESS', result: 21 });
      });
      it('a chord in a chain, a group of chains, a chord of chords', async () => {
        expect(await fromPython('chord_in_chain')).toMatchObject({ result: 106 });
        expect(await fromPython('group_of_chains')).toMatchObject({ result: [3, 6] });
        expect(await fromPython('chord_of_chords')).toMatchObject({ result: 12 });
      });
      it('a failed kq header task fails the chord with ChordError and its errback runs once', async () => {
        const before = marks().length;
        const outcome = await fromPython('chord_failure');
        // Python's get() re-raises the failed header task's error; the body itself stored ChordError.
        expect(outcome).toMatchObject({ exc_type: 'ValueError', stored_status: 'FAILURE', stored_exc_type: 'ChordError' });
        expect(outcome['stored_exc']).toMatch(/Dependency .* raised ValueError\('kq says no'/);
        await expect.poll(() => marks().length - before, { timeout: 10_000 }).toBe(1);
      });
      it('a failed Python header task fails a kq-joined chord the same way', async () => {
        const before = marks().length;
        const outcome = await fromPython('kq_chord_failure');
        expect(outcome).toMatchObject({ stored_status: 'FAILURE', stored_exc_type: 'ChordError' });
        expect(outcome['stored_exc']).toContain('python says no');
        await expect.poll(() => marks().filter((line) => line.startsWith('kq ')).length > 0, { timeout: 10_000 }).toBe(true);
        expect(marks().length - before).toBe(1);
      });
      it('link and link_error forwarded by a kq worker reach the Python queue', async () => {
        const before = marks().length;
        expect(await fromPython('link')).toMatchObject({ result: 10 });
        await expect.poll(() => marks().slice(before), { timeout: 10_000 }).toContain('py 10');
        const failed = await fromPython('link_error');
        expect(failed).toMatchObject({ status: 'FAILURE' });
        await expect.poll(() => marks().length - before, { timeout: 10_000 }).toBe(2);
      });
      it('chunks, map and starmap of a kq task run on the kq worker', async () => {
        expect(await fromPython('chunks')).toMatchObject({ result: [[0, 2], [4, 6], [8]] });
        expect(await fromPython('map')).toMatchObject({ result: [3, 7] });
        expect(await fromPython('starmap')).toMatchObject({ result: [3, 7] });
      });
      it("a kq task's result lists the tasks it sent: Python's AsyncResult.children reads them", async () => {
        expect(await fromPython('children')).toMatchObject({ status: 'SUCCESS', result: [0, 2, 4] });
      });
      it('a Python task replaced by a kq chain finishes the outer chain on kq', async () => {
        expect(await fromPython('replace')).toMatchObject({ status: 'SUCCESS', result: 11 });
      });
    });

    describe('built by kq', () => {
      it('a chain crosses languages step by step', async () => {
        const result = await chain(kq('add', 2, 2), py('add', 4), kq('mul', 10)).delay();
        expect(await result.get({ timeout: 30_000 })).toBe(80);
      });
      it('a group and a chord joined by whichever side finishes last', async () => {
        expect(await (await group([kq('add', 1, 1), py('add', 2, 2), kq('add', 3, 3)]).delay()).join({ timeout: 30_000 })).toEqual([2, 4, 6]);
        const header = [0, 1, 2, 3, 4].flatMap((i) => [kq('add', i, i), py('add', i, i)]);
        expect(await (await chord(header, py('tsum')).delay()).get({ timeout: 30_000 })).toBe(40);
        expect(await (await chord(header, kq('tsum')).delay()).get({ timeout: 30_000 })).toBe(40);
      });
      it('nesting: group upgraded in a chain, chord in a chain, group of chains, chord of chords', async () => {
        expect(await (await chain(kq('add', 1, 1), group([py('add', 1), kq('add', 2)]), kq('tsum'), py('mul', 3)).delay()).get({ timeout: 30_000 })).toBe(21);
        expect(await (await chain(chord([kq('add', 1, 1), py('add', 2, 2)], kq('tsum')), py('add', 100)).delay()).get({ timeout: 30_000 })).toBe(106);
        expect(await (await group([chain(kq('add', 1, 1), py('add', 1)), chain(py('add', 2, 2), kq('add', 2))]).delay()).join({ timeout: 30_000 })).toEqual([3, 6]);
        const chords = chord([chord([kq('add', 1, 1), py('add', 1, 1)], kq('tsum')), chord([py('add', 2, 2), kq('add', 2, 2)], py('tsum'))], kq('tsum'));
        expect(await (await chords.delay()).get({ timeout: 30_000 })).toBe(12);
      });
      it('chunks, map and starmap of a Python task run on the Python worker', async () => {
        const pyAdd = app.signature('interop.py_add', [], {}, { queue: pyQueue });
        const pyTsum = app.signature('interop.py_tsum', [], {}, { queue: pyQueue });
        expect(await (await new Chunks(pyAdd, [[1, 1], [2, 2], [3, 3]], 2).applyAsync([], {}, { queue: pyQueue })).join({ timeout: 30_000 })).toEqual([[2, 4], [6]]);
        expect(await (await new MapSignature('xmap', pyTsum, [[1, 2], [3, 4]]).applyAsync([], {}, { queue: pyQueue })).get({ timeout: 30_000 })).toEqual([3, 7]);
        expect(await (await new MapSignature('xstarmap', pyAdd, [[1, 2], [3, 4]]).applyAsync([], {}, { queue: pyQueue })).get({ timeout: 30_000 })).toEqual([3, 7]);
      });
      it('link and link_error reach the Python worker with the result and the failed id', async () => {
        const before = marks().length;
        const ok = await app.signature('interop.kq_add', [5, 5], {}, { queue: kqQueue, link: py('errback') }).delay();
        expect(await ok.get({ timeout: 30_000 })).toBe(10);
        await expect.poll(() => marks().slice(before), { timeout: 10_000 }).toContain('py 10');
        const failed = await app.signature('interop.kq_fail', [], {}, { queue: kqQueue, linkError: py('errback') }).delay();
        await expect(failed.get({ timeout: 30_000 })).rejects.toThrow();
        await expect.poll(() => marks().slice(before), { timeout: 10_000 }).toContain(`py ${failed.id}`);
      });
      it('a kq task replaced by a Python chain, inside a kq chain', async () => {
        const result = await chain(kq('replace_with_py', 4), kq('add', 1)).delay();
        expect(await result.get({ timeout: 30_000 })).toBe(11); // (4 + 1) * 2 on Python, then + 1 on kq
      });
      it('a failed header task fails the chord with ChordError; the errback runs once', async () => {
        const before = marks().length;
        const body = py('tsum');
        body.linkError(py('errback'));
        const result = await chord([kq('add', 1, 1), py('fail')], body).delay();
        const error = (await result.get({ timeout: 30_000 }).catch((thrown: unknown) => thrown)) as TaskFailedError;
        expect(error).toBeInstanceOf(TaskFailedError);
        expect(error.excType).toBe('ChordError');
        await expect.poll(() => marks().length - before, { timeout: 10_000 }).toBe(1);
      });
    });
  });
}

const rpcUp = await brokerReachable('amqp', 'amqp://guest:guest@127.0.0.1:5672');
describe.skipIf(!rpcUp || !python)('canvas on rpc://', { timeout: 60_000 }, () => {
  const ns = `kqr${randomUUID().slice(0, 8)}`;
  const env = {
    KQ_INTEROP_BROKER: 'amqp://guest:guest@127.0.0.1:5672//',
    KQ_INTEROP_BACKEND: 'rpc://',
    KQ_INTEROP_PY_QUEUE: `${ns}.py`,
    KQ_INTEROP_KQ_QUEUE: `${ns}.kq`,
    KQ_INTEROP_NAMESPACE: ns,
  };
  let app: App;
  let worker: Worker;
  let pythonWorker: ChildProcess;

  beforeAll(async () => {
    app = new App('canvas-rpc', { broker: 'amqp://guest:guest@127.0.0.1:5672', backend: 'rpc://', controlExchange: ns, taskDefaultQueue: `${ns}.kq` });
    app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `kq@${ns}`, concurrency: 4, logger: new Logger('canvas', { level: 'critical', sink: () => undefined }) });
    await worker.start();
    pythonWorker = startPythonWorker(`py@${ns}`, env);
  });

  afterAll(async () => {
    pythonWorker?.kill('SIGKILL');
    await worker?.stop({ cold: true });
    await app?.close();
  });

  it('a chain and a group across languages reply to the client that sent them', async () => {
    const kq = (...args: unknown[]): Signature => app.signature('interop.kq_add', args, {}, { queue: `${ns}.kq` });
    const py = (...args: unknown[]): Signature => app.signature('interop.py_add', args, {}, { queue: `${ns}.py` });
    expect(await (await chain(kq(1, 1), py(2), kq(3)).delay()).get({ timeout: 30_000 })).toBe(7);
    expect(await (await group([kq(1, 1), py(2, 2)]).delay()).join({ timeout: 30_000 })).toEqual([2, 4]);
  });

  it("refuses a chord with Celery's error, before sending anything", async () => {
    const add = app.signature('interop.kq_add');
    await expect(chord([add.clone([1, 1])], add.clone([1])).delay()).rejects.toThrow(ChordError);
    await expect(chord([add.clone([1, 1])], add.clone([1])).delay()).rejects.toThrow(/The "rpc" result backend does not support chords!/);
    await expect(chain(add.clone([1, 1]), group([add.clone([1]), add.clone([2])]), add.clone([1])).delay()).rejects.toThrow(/does not support chords/);
  });
});
