import { describe, expect, it } from 'vitest';
import { celeryVersion, integrationSuiteFound } from '../src/celery-versions';
import { QUORUM_SETTINGS, vhostName } from '../src/run-isolation';

describe('celery-suite run isolation', () => {
  it.skipIf(!integrationSuiteFound('5.6.3'))("names a run's vhost by version, worker and runner, so two runners never share one", () => {
    const celery = celeryVersion('5.6.3');
    expect(vhostName(celery, 'kq', 101)).toBe('kq-suite-5.6.3-kq-101');
    expect(vhostName(celery, 'kq', 101)).not.toBe(vhostName(celery, 'kq', 102));
    expect(vhostName(celery, 'celery', 101)).not.toBe(vhostName(celery, 'kq', 101));
  });

  it('turns on the native delayed-delivery ladder for 5.5+ on RabbitMQ', () => {
    expect(QUORUM_SETTINGS).toEqual({ task_default_queue_type: 'quorum', task_default_exchange_type: 'topic', broker_transport_options: { confirm_publish: true } });
  });
});
