import { describe, expect, it } from 'vitest';
import { confTable } from '../src/cluster/worker-conf';
import { DEFAULT_CONFIG } from '../src/config';

describe('inspect conf', () => {
  it("masks as Celery's filter_hidden_settings does: URL passwords with eight stars, secret-looking settings whole", () => {
    const table = confTable({
      ...DEFAULT_CONFIG,
      broker: 'amqp://guest:secret@127.0.0.1:5672//',
      backend: 'redis://:secret@127.0.0.1:6379/0',
      brokerTransportOptions: { visibility_timeout: 10, sentinel_password: 'hunter2' },
    });
    expect(table['broker_url']).toBe('amqp://guest:********@127.0.0.1:5672//');
    expect(table['result_backend']).toBe('redis://:********@127.0.0.1:6379/0');
    expect(table['broker_transport_options']).toEqual({ visibility_timeout: 10, sentinel_password: '********' });
    expect(JSON.stringify(table)).not.toContain('secret');
  });
});
