import { Exchange, MemoryBroker, Producer, Queue } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Reject, TaskFailedError } from '../src/errors/errors';
import { Logger, type LogRecord } from '../src/log/logger';
import { type Worker } from '../src/runtime/worker';

async function waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let seq = 0;

describe('Worker on memory://', () => {
  let app: App;
  let worker: Worker;
  let logs: LogRecord[];
  let broker: string;

  const startWorker = async (options: ConstructorParameters<typeof Worker>[1] = {}): Promise<Worker> => {
    worker = app.worker({ hostname: `w${seq}@test`, logger: new Logger('test', { level: 'debug', sink: (record) => logs.push(record) }), ...options });
    await worker.start();
    return worker;
  };

  beforeEach(() => {
    seq++;
    broker = `worker-test-${seq}`;
    MemoryBroker.reset(broker);
    logs = [];
    app = new App('test', { broker: `memory://${broker}`, backend: `memory://${broker}` });
  });

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app.close();
  });

  it('runs a task and stores its result', async () => {
    const add = app.task('add', (_ctx, x: number, y: number) => x + y);
    await startWorker();
    const result = await add.delay(2, 3);
    expect(await result.get({ timeout: 5000 })).toBe(5);
    expect(await result.state()).toBe('SUCCESS');
  });

  it('passes kwargs and the request through the context', async () => {
    const seen: unknown[] = [];
    const echo = app.task(
      'echo',
      (ctx, a: string, k?: number) => {
        seen.push([a, k, ctx.request.kwargs, ctx.request.retries, ctx.request.hostname]);
        return ctx.request.id;
      },
      { params: ['a', 'k?'] },
    );
    await startWorker();
    const result = await echo.applyAsync(['x'], { kwargs: { k: 1 }, taskId: 'my-id' });
    expect(await result.get({ timeout: 5000 })).toBe('my-id');
    expect(seen).toEqual([['x', 1, { k: 1 }, 0, worker.hostname]]);
  });

  it("stores failures in Celery's shape and get() raises", async () => {
    const boom = app.task('boom', () => {
      throw new TypeError('kaboom');
    });
    await startWorker();
    const result = await boom.delay();
    const error = await result.get({ timeout: 5000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    const meta = await result.meta();
    expect(meta?.status).toBe('FAILURE');
    expect(meta?.result).toMatchObject({ exc_type: 'TypeError', exc_message: ['kaboom'] });
    expect(typeof meta?.traceback).toBe('string');
  });

  it('retries with ctx.retry() until it succeeds', async () => {
    let attempts = 0;
    const flaky = app.task(
      'flaky',
      async (ctx) => {
        attempts++;
        if (attempts < 3) return ctx.retry({ countdown: 0.05, exc: new Error(`attempt ${attempts}`) });
        return `ok after ${ctx.request.retries} retries`;
      },
      { maxRetries: 5 },
    );
    await startWorker();
    const result = await flaky.delay();
    expect(await result.get({ timeout: 5000 })).toBe('ok after 2 retries');
  });

  it('gives up after maxRetries and stores the last error', async () => {
    const hopeless = app.task('hopeless', (ctx) => ctx.retry({ countdown: 0.01, exc: new RangeError('still broken') }), { maxRetries: 2 });
    await startWorker();
    const result = await hopeless.delay();
    await expect(result.get({ timeout: 5000 })).rejects.toThrow(/still broken/);
  });

  it('retries automatically on listed errors with backoff', async () => {
    let attempts = 0;
    const auto = app.task(
      'auto',
      () => {
        attempts++;
        if (attempts < 2) throw new RangeError('transient');
        return attempts;
      },
      { autoretryFor: [RangeError], retryBackoff: 0.01, retryJitter: false, maxRetries: 3 },
    );
    await startWorker();
    expect(await (await auto.delay()).get({ timeout: 5000 })).toBe(2);
  });

  it('stores an AbortError thrown because of the soft limit as SoftTimeLimitExceeded, as a Python task would fail', async () => {
    const fetchy = app.task(
      'fetchy',
      (ctx) =>
        new Promise((_resolve, reject) => {
          // What fetch(url, { signal: ctx.signal }) does when the signal aborts.
          ctx.signal.addEventListener('abort', () => reject(new DOMException('This operation was aborted', 'AbortError')));
        }),
      { softTimeLimit: 0.05 },
    );
    await startWorker();
    const result = await fetchy.delay();
    await expect(result.get({ timeout: 5000 })).rejects.toThrow(/SoftTimeLimitExceeded/);
    expect(await result.meta()).toMatchObject({ status: 'FAILURE', result: { exc_type: 'SoftTimeLimitExceeded', exc_module: 'celery.exceptions' } });
  });

  it('aborts the signal at the soft limit and fails at the hard limit, freeing the slot', async () => {
    const reasons: string[] = [];
    const sleepy = app.task(
      'sleepy',
      (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => reasons.push((ctx.signal.reason as Error).name));
          setTimeout(resolve, 10_000).unref();
        }),
      { softTimeLimit: 0.05, timeLimit: 0.2 },
    );
    const quick = app.task('quick', () => 'quick');
    await startWorker({ concurrency: 1 });
    const slow = await sleepy.delay();
    await expect(slow.get({ timeout: 5000 })).rejects.toThrow(/Hard time limit/);
    expect(reasons[0]).toBe('SoftTimeLimitExceeded');
    expect(await (await quick.delay()).get({ timeout: 5000 })).toBe('quick');
  });

  it("counts the soft limit from the run's start, not from the task's first await", async () => {
    // 150 ms of synchronous work, then 250 ms asleep: a 0.3 s limit falls inside the sleep. A timer started only once
    // the function first returned would fall at 450 ms, after the task ended.
    const busyThenSleep = app.task(
      'busy-then-sleep',
      async (ctx) => {
        const until = performance.now() + 150;
        while (performance.now() < until);
        await new Promise((resolve) => setTimeout(resolve, 250));
        return ctx.signal.aborted ? (ctx.signal.reason as Error).name : 'not aborted';
      },
      { softTimeLimit: 0.3 },
    );
    await startWorker();
    expect(await (await busyThenSleep.delay()).get({ timeout: 5000 })).toBe('SoftTimeLimitExceeded');
  });

  it('finishes a task whose task-succeeded listener threw, late-acked and with a result to store', async () => {
    // The run returned at once, so the request settles inline; a failure in what follows the success still ends the
    // request (the result was stored before the event, so it stays SUCCESS) rather than leaving it active.
    const quick = app.task('quick-listened', () => 1, { acksLate: true });
    await startWorker();
    let threw = false;
    worker.on('task', (kind) => {
      if (kind === 'succeeded' && !threw) {
        threw = true;
        throw new Error('a listener failed');
      }
    });
    const result = await quick.delay();
    expect(await result.get({ timeout: 5000 })).toBe(1);
    await waitFor(() => threw && worker.state.active.size === 0 && worker.state.reserved.size === 0);
    await worker.pool.drained();
  });

  it('discards expired and revoked tasks with a REVOKED result', async () => {
    let runs = 0;
    const job = app.task('job', () => ++runs);
    await startWorker();
    const expired = await job.applyAsync([], { expires: new Date(Date.now() - 1000) });
    await waitFor(() => logs.some((record) => record.message.includes('Discarding expired')));
    expect(await expired.state()).toBe('REVOKED');
    await app.control.revoke('revoked-id');
    await waitFor(() => worker.state.revoked.has('revoked-id'));
    const revoked = await job.applyAsync([], { taskId: 'revoked-id' });
    await waitFor(() => logs.some((record) => record.message.includes('Discarding revoked')));
    expect(await revoked.state()).toBe('REVOKED');
    expect(runs).toBe(0);
  });

  it('holds ETA tasks in the worker when the strategy says so, bumping prefetch', async () => {
    app.conf.etaStrategy = 'worker';
    const job = app.task('later', () => Date.now());
    await startWorker({ concurrency: 2, prefetchMultiplier: 1 });
    const sentAt = Date.now();
    const result = await job.applyAsync([], { countdown: 0.3 });
    await waitFor(() => worker.scheduled().length === 1);
    expect(worker.prefetchCount).toBe(3);
    const ranAt = (await result.get({ timeout: 5000 })) as number;
    expect(ranAt - sentAt).toBeGreaterThanOrEqual(250);
    expect(worker.prefetchCount).toBe(2);
  });

  it('holds ETA tasks in the worker by default, so the message stays in its queue for any worker', async () => {
    expect(await app.etaStrategy()).toBe('worker');
    const job = app.task('later-default', () => 'done');
    await startWorker({ concurrency: 1, prefetchMultiplier: 1 });
    const result = await job.applyAsync([], { countdown: 0.3 });
    await waitFor(() => worker.scheduled().length === 1);
    expect(worker.prefetchCount).toBe(2);
    expect(await result.get({ timeout: 5000 })).toBe('done');
  });

  it('stops taking ETA tasks at workerEtaTaskLimit: the prefetch is capped there and the broker keeps the rest', async () => {
    app.conf.workerEtaTaskLimit = 3;
    const ran: number[] = [];
    const job = app.task('later-limited', (_ctx, n: number) => ran.push(n));
    await startWorker({ concurrency: 1, prefetchMultiplier: 1 });
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => job.applyAsync([n], { countdown: 0.6 })));
    await waitFor(() => worker.scheduled().length === 3);
    expect(worker.prefetchCount).toBe(3);
    // Held ones only leave when they run: until then, no fourth is taken.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(worker.scheduled().length).toBeLessThanOrEqual(3);
    expect(worker.state.reserved.size).toBeLessThanOrEqual(3);
    await Promise.all(results.map((result) => result.get({ timeout: 10_000 })));
    expect(ran.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(worker.prefetchCount).toBe(1);
  });

  it('defers ETA tasks to the broker when told to (etaStrategy broker)', async () => {
    app.conf.etaStrategy = 'broker';
    const job = app.task('later2', () => 'done');
    await startWorker();
    const result = await job.applyAsync([], { countdown: 0.2 });
    expect(await result.get({ timeout: 5000 })).toBe('done');
    expect(worker.scheduled()).toHaveLength(0);
  });

  it("reports each message's settlement once the broker has it: after an acks-late task's run, a reject for Reject", async () => {
    const late = app.task('settle.late', () => 'ok', { acksLate: true });
    const refused = app.task('settle.refused', () => {
      throw new Reject('not this one', false);
    }, { acksLate: true });
    await startWorker();
    const settled: string[] = [];
    let finishedBeforeAck = false;
    worker.on('task', (kind, request) => void (kind === 'succeeded' && request.name === 'settle.late' && (finishedBeforeAck = !settled.length)));
    worker.on('settled', (request, action) => void settled.push(`${request.name} ${action}`));
    expect(await (await late.applyAsync([])).get({ timeout: 5000 })).toBe('ok');
    await refused.applyAsync([]);
    await waitFor(() => settled.length === 2);
    expect(finishedBeforeAck).toBe(true);
    expect(settled).toEqual(['settle.late ack', 'settle.refused reject']);
  });

  it('sends one task-received for a task it deferred to the broker, when it comes back to run', async () => {
    const job = app.task('later3', () => 'done');
    // Sent by a client that publishes ETA tasks at once; this worker then defers it to the broker.
    const result = await job.applyAsync([], { countdown: 0.3 });
    app.conf.etaStrategy = 'broker';
    await startWorker();
    const received: string[] = [];
    worker.on('task', (kind, request) => void (kind === 'received' && received.push(request.id)));
    expect(await result.get({ timeout: 5000 })).toBe('done');
    expect(logs.some((record) => record.message.includes('deferred to the broker'))).toBe(true);
    expect(received).toEqual([result.id]);
  });

  it('sends one task-received for a task it holds until its ETA', async () => {
    const job = app.task('later4', () => 'done');
    await startWorker();
    const received: string[] = [];
    worker.on('task', (kind, request) => void (kind === 'received' && received.push(request.id)));
    const result = await job.applyAsync([], { countdown: 0.3 });
    expect(await result.get({ timeout: 5000 })).toBe('done');
    expect(received).toEqual([result.id]);
  });

  it('sends no second task-received when the broker redelivers a task it still holds, and runs it once', async () => {
    const runs: string[] = [];
    const job = app.task('later5', (ctx) => runs.push(ctx.request.id));
    const result = await job.applyAsync([], { countdown: 0.6 });
    // The message as the broker stores it, to hand out again as a redelivery while the worker holds it.
    const memory = MemoryBroker.named(broker);
    const [claim] = memory.take(['celery'], 1);
    memory.put('celery', claim!.message, claim!.priority, 'tail');
    await startWorker();
    await waitFor(() => worker.scheduled().length === 1);
    memory.put('celery', { ...claim!.message, redelivered: true }, claim!.priority, 'tail');
    await waitFor(() => logs.some((record) => record.message.includes('redelivered while held')));
    expect(worker.scheduled()).toHaveLength(1);
    await result.get({ timeout: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(runs).toEqual([result.id]);
    expect(logs.filter((record) => record.message.includes(`[${result.id}] received`))).toHaveLength(1);
  });

  it('applies rate limits', async () => {
    const stamps: number[] = [];
    const limited = app.task('limited', () => stamps.push(Date.now()), { rateLimit: '20/s' });
    await startWorker({ concurrency: 10 });
    const results = await Promise.all(Array.from({ length: 30 }, () => limited.delay()));
    await Promise.all(results.map((result) => result.get({ timeout: 10_000 })));
    // 20 tokens in the bucket, then one every 50 ms: the last ten cannot all start at once.
    expect(stamps[29]! - stamps[0]!).toBeGreaterThanOrEqual(400);
  });

  it('runs link callbacks with the parent result', async () => {
    const add = app.task('add', (_ctx, x: number, y: number) => x + y);
    const store: number[] = [];
    app.task('collect', (_ctx, value: number) => store.push(value));
    await startWorker();
    await add.applyAsync([1, 2], { link: app.tasks.get('collect')!.signature() as never });
    await waitFor(() => store.length === 1);
    expect(store).toEqual([3]);
  });

  it('rejects malformed messages between good tasks and keeps working', async () => {
    const good = app.task('good', (_ctx, n: number) => n);
    const rejected: string[] = [];
    await startWorker();
    worker.on('rejected', (_delivery, reason) => rejected.push(reason.name));
    const producer = new Producer(app.connection);
    const queue = new Queue('celery', { exchange: new Exchange('celery'), routingKey: 'celery' });
    const raw = (body: string, headers: Record<string, unknown>, contentType = 'application/json'): Promise<void> =>
      producer.publish(Buffer.from(body), { routingKey: 'celery', headers, contentType, contentEncoding: 'utf-8', declare: [queue] });
    const first = await good.delay(1);
    await raw('[[1, 2], {}]', { task: 'good', id: 'two-elements' });
    await raw('{not json', { task: 'good', id: 'garbage' });
    await raw('[[], {}, {}]', { task: 'nope.unknown', id: 'unknown' });
    await raw('[[], {}, {}]', { id: 'no-task-header' });
    await raw('[[], {}, {}]', { task: 'good', id: 'pickle' }, 'application/x-python-serialize');
    const last = await good.delay(2);
    expect(await first.get({ timeout: 5000 })).toBe(1);
    expect(await last.get({ timeout: 5000 })).toBe(2);
    await waitFor(() => rejected.length === 5);
    expect(rejected.sort()).toEqual(['ContentDisallowed', 'DecodeError', 'InvalidTaskError', 'InvalidTaskError', 'NotRegistered']);
    expect(await (await app.asyncResult('unknown')).state()).toBe('FAILURE');
  });

  it('with pickle accepted, warns once at start-up and stores a pickled task as ContentDisallowed', async () => {
    await app.close();
    app = new App('test', { broker: `memory://${broker}`, backend: `memory://${broker}`, acceptContent: ['json', 'pickle'] });
    app.task('good', (_ctx, n: number) => n);
    await startWorker();
    const warnings = logs.filter((record) => record.level === 'warning' && record.message.includes('kq cannot decode pickle'));
    expect(warnings).toHaveLength(1);
    const producer = new Producer(app.connection);
    const queue = new Queue('celery', { exchange: new Exchange('celery'), routingKey: 'celery' });
    await producer.publish(Buffer.from([0x80, 0x04, 0x95]), {
      routingKey: 'celery',
      headers: { task: 'good', id: 'pickled' },
      contentType: 'application/x-python-serialize',
      contentEncoding: 'binary',
      declare: [queue],
    });
    const result = await app.asyncResult('pickled');
    await waitFor(() => logs.some((record) => record.message.includes('Rejected message')));
    await expect.poll(() => result.state()).toBe('FAILURE');
    expect((await result.meta())?.result).toEqual({
      exc_type: 'ContentDisallowed',
      exc_module: 'kombu.exceptions',
      exc_message: [expect.stringMatching(/kq cannot decode pickle, even when it is in the accept list/)],
    });
  });

  it('says nothing about pickle when it is not accepted', async () => {
    await startWorker();
    expect(logs.filter((record) => record.message.includes('pickle'))).toEqual([]);
  });

  it('rejects a message when the task throws Reject', async () => {
    app.task('refuse', () => {
      throw new Reject('not today', false);
    });
    await startWorker();
    const result = await app.sendTask('refuse');
    await waitFor(() => logs.some((record) => record.message.includes('rejected (requeue=false)')));
    expect(await result.state()).toBe('REJECTED');
  });

  it('finishes running tasks on warm shutdown and gives back the rest', async () => {
    let finished = 0;
    const slow = app.task('slow', () => new Promise((resolve) => setTimeout(() => resolve(++finished), 200)), { acksLate: true });
    await startWorker({ concurrency: 1, prefetchMultiplier: 4 });
    const results = await Promise.all([slow.delay(), slow.delay(), slow.delay()]);
    await waitFor(() => worker.state.active.size === 1);
    await worker.stop();
    expect(finished).toBe(1);
    expect(await results[0]!.get({ timeout: 1000 })).toBe(1);
    // The two that never started are back in the queue for the next worker.
    const next = app.worker({ hostname: 'next@test', logger: new Logger('next', { level: 'error', sink: () => undefined }) });
    await next.start();
    expect(await results[1]!.get({ timeout: 5000 })).toBeGreaterThan(1);
    expect(await results[2]!.get({ timeout: 5000 })).toBeGreaterThan(1);
    await next.stop();
  });

  it('answers ping over the mailbox', async () => {
    await startWorker();
    expect(await app.control.ping({ timeout: 300 })).toEqual([{ [worker.hostname]: { ok: 'pong' } }]);
  });
});

describe('a task that keeps killing its worker', () => {
  it('is failed with WorkerLostError after workerMaxRedeliveries, even where the broker does not count', async () => {
    const broker = `crash-loop-${Date.now()}`;
    MemoryBroker.reset(broker);
    const runs: string[] = [];
    const quiet = new Logger('crash', { level: 'critical', sink: () => undefined });
    const make = (): App => {
      const app = new App('crash', { broker: `memory://${broker}`, backend: `memory://${broker}`, workerMaxRedeliveries: 2 });
      // Hangs forever: the test "kills" its worker by closing the connection under it, as a crash would.
      app.task('crash.hang', (ctx) => new Promise(() => runs.push(ctx.request.id)), { acksLate: true });
      return app;
    };
    const sender = make();
    const result = await sender.sendTask('crash.hang');
    for (let life = 1; life <= 2; life++) {
      const app = make();
      await app.worker({ hostname: `victim${life}@test`, logger: quiet, cluster: false }).start();
      await waitFor(() => runs.length === life);
      await app.connection.close(); // the unacked message goes back, redelivered
    }
    const survivor = make();
    const worker = survivor.worker({ hostname: 'survivor@test', logger: quiet, cluster: false });
    await worker.start();
    await expect(result.get({ timeout: 5000 })).rejects.toThrow(/delivered 3 times/);
    expect(runs).toHaveLength(2);
    await worker.stop();
    await survivor.close();
    await sender.close();
  });
});
