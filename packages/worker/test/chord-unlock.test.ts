/**
 * Chords on a result backend without a native join (PostgreSQL results): kq sends Celery's `celery.chord_unlock`,
 * which polls the header's results and sends the body — run here by a kq worker, as a Python worker would run it.
 */
import { randomUUID } from 'node:crypto';
import { MemoryBroker } from '@kq/core';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { chain, chord, group } from '../src/canvas/index';
import { TaskFailedError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('chords joined by celery.chord_unlock (PostgreSQL results)', { timeout: 30_000 }, () => {
  const broker = `chord-unlock-${randomUUID().slice(0, 8)}`;
  let app: App;
  let worker: Worker;
  const sent: string[] = [];

  beforeAll(async () => {
    MemoryBroker.reset(broker);
    app = new App('unlock', { broker: `memory://${broker}`, backend: brokerUrls.postgres, resultChordRetryInterval: 0.1 });
    const send = app.sendTaskMessage.bind(app);
    app.sendTaskMessage = (name, args, options, embed) => {
      sent.push(name);
      return send(name, args, options, embed);
    };
    worker = app.worker({ hostname: `unlock@${broker}`, concurrency: 4, logger: new Logger('unlock', { level: 'critical', sink: () => undefined }) });
    app.task('u.add', (_ctx, x: number, y: number) => x + y);
    app.task('u.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
    app.task('u.fail', () => {
      throw new RangeError('no');
    });
    await worker.start();
  });

  afterAll(async () => {
    await worker?.stop({ cold: true });
    await app?.close();
  });

  it('sends celery.chord_unlock, which runs the body once the header is done', async () => {
    const add = app.signature('u.add');
    const result = await chord([add.clone([1, 1]), add.clone([2, 2]), add.clone([3, 3])], app.signature('u.total')).delay();
    expect(await result.get({ timeout: 20_000 })).toBe(12);
    expect(sent).toContain('celery.chord_unlock');
    const upgraded = await chain(add.clone([1, 1]), group([add.clone([1]), add.clone([2])]), app.signature('u.total')).delay();
    expect(await upgraded.get({ timeout: 20_000 })).toBe(7);
  });

  it('a failed header task fails the body with ChordError', async () => {
    const result = await chord([app.signature('u.add', [1, 1]), app.signature('u.fail')], app.signature('u.total')).delay();
    const error = (await result.get({ timeout: 20_000 }).catch((thrown: unknown) => thrown)) as TaskFailedError;
    expect(error).toBeInstanceOf(TaskFailedError);
    expect(error.excType).toBe('ChordError');
    expect(error.message).toMatch(/Dependency .* raised ValueError\('no'\)/);
  });
});
