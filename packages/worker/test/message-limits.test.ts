/**
 * Limits on what a task message may ask of a worker: maxMessageSize on send and on receive (unread, rejected with the
 * reason, FAILURE stored), time limits past what a timer can hold, and ETAs decades (or millennia) away.
 */
import { MemoryBroker, MessageTooLarge, QueueNotFound } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { App } from '../src/app/app';
import { InvalidTaskError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import { encodeTaskMessage } from '../src/protocol/index';
import { EtaTimer } from '../src/runtime/eta';
import { setLongTimeout } from '../src/runtime/long-timeout';
import type { Worker } from '../src/runtime/worker';

async function waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let seq = 0;

describe('message limits on memory://', () => {
  let app: App;
  let worker: Worker | undefined;
  let broker: string;

  beforeEach(() => {
    broker = `message-limits-${++seq}`;
    MemoryBroker.reset(broker);
    app = new App('limits', { broker: `memory://${broker}`, backend: `memory://${broker}`, maxMessageSize: 4096 });
  });

  afterEach(async () => {
    await worker?.stop({ cold: true });
    worker = undefined;
    await app.close();
  });

  const start = async (): Promise<Worker> => {
    worker = app.worker({ hostname: `limits${seq}@test`, logger: new Logger('limits', { level: 'critical', sink: () => undefined }), cluster: false });
    await worker.start();
    return worker;
  };

  it('sendTask refuses a message over maxMessageSize with MessageTooLarge naming the setting', async () => {
    app.task('limits.echo', (_ctx, text: string) => text);
    await expect(app.sendTask('limits.echo', ['x'.repeat(5000)])).rejects.toThrow(MessageTooLarge);
    await expect(app.sendTask('limits.echo', ['x'.repeat(5000)])).rejects.toThrow(/over the maxMessageSize limit of 4,096 bytes/);
    await expect(app.sendTasks([{ name: 'limits.echo', args: ['x'.repeat(5000)] }])).rejects.toThrow(MessageTooLarge);
    // Refused before anything reached the broker: not even the queue was declared.
    await expect((await app.connection.channel()).checkQueue('celery')).rejects.toThrow(QueueNotFound);
  });

  it('sendTask refuses a countdown or expires no worker could read, saying which', async () => {
    await expect(app.sendTask('limits.echo', [], {}, { countdown: 1e300 })).rejects.toThrow(/The countdown \(1e\+300 seconds\) gives a date no worker can read/);
    await expect(app.sendTask('limits.echo', [], {}, { expires: Number.POSITIVE_INFINITY })).rejects.toThrow(/The expires \(Infinity seconds\)/);
    await expect(app.sendTask('limits.echo', [], {}, { countdown: Number.NaN })).rejects.toThrow(InvalidTaskError);
  });

  it('a worker rejects an oversize message unread, stores its FAILURE, and runs the next one', async () => {
    app.task('limits.echo', (_ctx, text: string) => text);
    const w = await start();
    const rejected: Error[] = [];
    w.on('rejected', (_delivery, reason) => rejected.push(reason));
    const channel = await app.connection.channel();
    // Published raw, past the producer's check: what a sender without the limit (or a hostile one) puts in the queue.
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'limits.echo', id: 'too-big', args: ['x'.repeat(5000)] }));
    const small = await app.sendTask('limits.echo', ['ok']);
    expect(await small.get({ timeout: 5000 })).toBe('ok');
    await waitFor(() => rejected.length === 1);
    expect(rejected[0]).toBeInstanceOf(MessageTooLarge);
    const big = await app.asyncResult('too-big');
    expect(await big.state()).toBe('FAILURE');
    await expect(big.get({ timeout: 1000 })).rejects.toThrow(/MessageTooLarge|maxMessageSize/);
  });

  it('runs a task whose time limits are past what a timer can hold (30 days, 1e300 s) without aborting it', async () => {
    let aborted: boolean | undefined;
    app.task('limits.slow', async (ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      aborted = ctx.signal.aborted;
      return 'done';
    });
    await start();
    const result = await app.sendTask('limits.slow', [], {}, { timeLimit: 1e300, softTimeLimit: 30 * 86_400 });
    expect(await result.get({ timeout: 5000 })).toBe('done');
    expect(aborted).toBe(false);
  });

  it('holds a task whose eta is in year 9999 without firing it, within workerEtaTaskLimit', async () => {
    await app.close();
    app = new App('limits', { broker: `memory://${broker}`, backend: `memory://${broker}`, workerEtaTaskLimit: 3 });
    let ran = 0;
    app.task('limits.later', () => ++ran);
    const w = await start();
    const channel = await app.connection.channel();
    for (let n = 0; n < 5; n++) {
      await channel.publish('', 'celery', encodeTaskMessage({ name: 'limits.later', id: `later-${n}`, eta: new Date('9999-12-31T23:59:59Z') }));
    }
    await waitFor(() => w.scheduled().length === 3);
    // The prefetch stops at the limit: the other two stay in the broker, not in this worker's memory.
    expect(w.prefetchCount).toBe(3);
    expect((await channel.checkQueue('celery')).messageCount).toBe(2);
    expect(ran).toBe(0);
  });
});

describe('timers for far-off times', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('setLongTimeout fires after a delay past 2^31-1 ms, not at once, and never for an infinite one', () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    setLongTimeout(() => fired.push('30 days'), 30 * 86_400_000);
    setLongTimeout(() => fired.push('infinite'), Number.POSITIVE_INFINITY);
    const cleared = setLongTimeout(() => fired.push('cleared'), 40 * 86_400_000);
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual([]);
    cleared.clear();
    vi.advanceTimersByTime(30 * 86_400_000);
    expect(fired).toEqual(['30 days']);
    vi.advanceTimersByTime(365 * 86_400_000);
    expect(fired).toEqual(['30 days']);
  });

  it('EtaTimer holds an item due in year 275760 (the last Date) without firing it', () => {
    vi.useFakeTimers();
    const timer = new EtaTimer<string>();
    const fired: string[] = [];
    timer.schedule('last', new Date(8.64e15), (item) => fired.push(item));
    vi.advanceTimersByTime(100 * 86_400_000);
    expect(fired).toEqual([]);
    expect(timer.size).toBe(1);
    expect(timer.clear()).toEqual(['last']);
  });
});
