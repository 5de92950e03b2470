import { afterEach, describe, expect, it } from 'vitest';
import { InvalidQueueOptions } from '@kq/core';
import { App } from '../src/app/app';

describe("Celery's setting names", () => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.close();
  });

  it('are taken as a Python celeryconfig spells them: accept_content with msgpack works with no other call', async () => {
    app = new App('proj', { broker_url: 'memory://settings', result_backend: 'memory://settings', accept_content: ['json', 'msgpack'], task_default_queue: 'q1', task_acks_late: true });
    expect(app.conf.broker).toBe('memory://settings');
    expect(app.conf.backend).toBe('memory://settings');
    expect(app.conf.acceptContent).toEqual(['json', 'msgpack']);
    expect(app.conf.taskDefaultQueue).toBe('q1');
    expect(app.conf.taskAcksLate).toBe(true);
    await app.codecsReady(); // msgpack loaded because it was named
  });

  it("task_default_queue_type = 'quorum' declares the queues kq creates as quorum queues, as Celery 5.5 does", () => {
    app = new App('proj', { broker_url: 'memory://settings', task_default_queue_type: 'quorum', task_default_delivery_limit: 5 });
    expect(app.router.queue('celery').toArguments()).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 5 });
    expect(app.router.queue('other').toArguments()).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 5 });
    // Classic, the default, is declared with no argument at all, as Celery declares it.
    expect(new App('classic', { broker_url: 'memory://settings' }).router.queue('celery').toArguments()).toEqual({});
  });

  it('refuse a delivery limit on classic queues at start-up, where RabbitMQ would ignore it', () => {
    expect(() => new App('proj', { broker_url: 'memory://settings', task_default_delivery_limit: 5 })).toThrow(InvalidQueueOptions);
  });

  it('refuse a name that is no setting, instead of ignoring it', () => {
    expect(() => new App('proj', { task_acks_latte: true })).toThrow(/Unknown setting "task_acks_latte"/);
  });
});
