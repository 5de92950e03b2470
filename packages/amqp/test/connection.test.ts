import { describe, expect, it } from 'vitest';
import { ConnectionLost, KqError, isRecoverable } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { AmqpTransport } from '../src/index';
import { AMQP_URL, namer } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('connection');

describe.skipIf(!up)('connecting', () => {
  it('negotiates the heartbeat from the option or the URL, and emits connected', async () => {
    for (const [transport, heartbeat] of [
      [new AmqpTransport(AMQP_URL, { heartbeat: 7, connectionName: name('hb-option') }), 7],
      [new AmqpTransport(`${AMQP_URL}/?heartbeat=9`, { connectionName: name('hb-url') }), 9],
    ] as const) {
      const events: string[] = [];
      transport.on('connected', () => events.push('connected'));
      await transport.connect();
      expect(transport.isConnected).toBe(true);
      expect(events).toEqual(['connected']);
      const connection = (await transport.supervisor.connection()).connection as unknown as { heartbeat: number };
      expect(connection.heartbeat).toBe(heartbeat);
      await transport.close();
      expect(transport.isConnected).toBe(false);
    }
  });

  it('fails a wrong password or a missing vhost with an error that says what to fix, not retried', async () => {
    const url = new URL(AMQP_URL);
    const wrongPassword = new AmqpTransport(`amqp://${url.username || 'guest'}:definitely-wrong@${url.host}`, { connectTimeout: 3000 });
    const failure = await wrongPassword.connect().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(KqError);
    expect(isRecoverable(failure)).toBe(false);
    expect((failure as Error).message).toMatch(/user, password and vhost/);
    await wrongPassword.close();

    const missingVhost = new AmqpTransport(`${AMQP_URL}/${encodeURIComponent(name('no-such-vhost'))}`, { connectTimeout: 3000 });
    const vhostFailure = await missingVhost.connect().catch((error: unknown) => error);
    expect(vhostFailure).toBeInstanceOf(KqError);
    expect(isRecoverable(vhostFailure)).toBe(false);
    await missingVhost.close();
  });

  it('fails an unreachable broker with a recoverable ConnectionLost', async () => {
    const nowhere = new AmqpTransport('amqp://guest:guest@127.0.0.1:1', { connectTimeout: 2000 });
    const failure = await nowhere.connect().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConnectionLost);
    expect(isRecoverable(failure)).toBe(true);
    await nowhere.close();
  });

  it('refuses channels after close', async () => {
    const transport = new AmqpTransport(AMQP_URL);
    const channel = await transport.createChannel();
    await transport.close();
    expect(channel.isOpen).toBe(false);
    await expect(transport.createChannel()).rejects.toThrow(/closed/);
  });
});
