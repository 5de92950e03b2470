import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';

const BROKER = 'redis://127.0.0.1:6379/5';
const up = await brokerReachable('redis', BROKER);

describe.skipIf(!up)('App.close', () => {
  const scard = (key: string): number => Number(spawnSync('redis-cli', ['-n', '5', 'SCARD', key], { encoding: 'utf8' }).stdout.trim());

  // With a backend to close first, the second close used to race the first one's reply-queue delete.
  it('is safe to call twice, also concurrently: no reply binding is left behind', async () => {
    const ns = `kqclose${randomUUID().slice(0, 8)}`;
    const app = new App('close', { broker: BROKER, backend: BROKER, controlExchange: ns });
    await app.backend();
    await app.control.ping({ timeout: 50 }); // declares and binds this process's reply queue
    const bindings = `_kombu.binding.reply.${ns}.pidbox`;
    expect(scard(bindings)).toBe(1);
    await Promise.all([app.close(), app.close()]);
    await app.close();
    expect(scard(bindings)).toBe(0);
  });
});
