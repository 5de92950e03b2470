import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app';

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

  it('refuse a name that is no setting, instead of ignoring it', () => {
    expect(() => new App('proj', { task_acks_latte: true })).toThrow(/Unknown setting "task_acks_latte"/);
  });
});
