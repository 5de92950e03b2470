import type { Transport } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { confTable, hideSecrets } from '../src/cluster/worker-conf';
import { brokerInfo } from '../src/cluster/worker-stats';
import type { Worker } from '../src/runtime/worker';
import { DEFAULT_CONFIG } from '../src/config/config';

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

describe('hideSecrets', () => {
  it('masks secret-looking names at any depth and passwords in URLs, in objects and lists; leaves the rest', () => {
    expect(
      hideSecrets({
        visibility_timeout: 10,
        sentinel_kwargs: { password: 'hunter2', socket_timeout: 1 },
        ssl: { keyfile_password: 'hunter2', ca_certs: '/etc/ca.pem' },
        alternates: ['amqp://u:hunter2@h1//', 'amqp://u:hunter2@h2//'],
        api_token: null,
      }),
    ).toEqual({
      visibility_timeout: 10,
      sentinel_kwargs: { password: '********', socket_timeout: 1 },
      ssl: { keyfile_password: '********', ca_certs: '/etc/ca.pem' },
      alternates: ['amqp://u:**@h1//', 'amqp://u:**@h2//'],
      api_token: null,
    });
  });

  it("inspect stats: the broker's transport options travel masked (Celery sends them as configured)", () => {
    const worker = { app: { conf: { brokerTransportOptions: { visibility_timeout: 10, sentinel_kwargs: { password: 'hunter2' } } } } } as unknown as Worker;
    const transport = { describe: () => ({ hostname: '127.0.0.1', userid: null, virtualHost: '0', port: 6379, ssl: false, transport: 'redis' }) } as unknown as Transport;
    const info = brokerInfo(worker, transport);
    expect(info['transport_options']).toEqual({ visibility_timeout: 10, sentinel_kwargs: { password: '********' } });
    expect(JSON.stringify(info)).not.toContain('hunter2');
  });
});
