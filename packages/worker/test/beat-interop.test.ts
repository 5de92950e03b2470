/**
 * What kq beat sends is a Celery task message: a Python Celery 5 worker (Debian's python3-celery) runs it and stores
 * the result under the tick's deterministic task id. Both brokers, through their beat leases' atomic commits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Transport } from '@kq/core';
import { AmqpBeatLease, type AmqpTransport } from '@kq/amqp';
import { RedisBeatLease, type RedisTransport } from '@kq/redis';
import { brokerReachable, pythonAvailable, pythonInterpreter, waitFor } from '@kq/test-harness';
import { App } from '../src/app/app';
import { Beat, beatTaskId, type BeatLease } from '../src/beat/index';

const interopDir = fileURLToPath(new URL('./interop', import.meta.url));
const python = await pythonAvailable(['celery']);
const backend = 'redis://127.0.0.1:6379/7';
const redisUp = await brokerReachable('redis', backend);
const setups = [
  { kind: 'redis', broker: 'redis://127.0.0.1:6379/7', pyBroker: 'redis://127.0.0.1:6379/7', up: redisUp },
  { kind: 'amqp', broker: 'amqp://guest:guest@127.0.0.1:5672', pyBroker: 'amqp://guest:guest@127.0.0.1:5672//', up: redisUp && (await brokerReachable('amqp')) },
];

function leaseFor(transport: Transport, group: string): BeatLease {
  return transport.name === 'redis'
    ? new RedisBeatLease(transport as RedisTransport, { group, leaseMs: 2000, renewIntervalMs: 200 })
    : new AmqpBeatLease(transport as AmqpTransport, { group, settleMs: 100 });
}

describe.concurrent.each(setups)('kq beat → Python Celery worker on $kind', ({ kind, broker, pyBroker, up }) => {
  it.skipIf(!up || !python)('a Python worker runs the ticks kq beat sends', async () => {
    const ns = `kqbeat${randomUUID().slice(0, 8)}`;
    const queue = `${ns}.py`;
    let pythonWorker: ChildProcess | undefined;
    const app = new App('beat-interop', { broker, backend });
    const sent: Array<{ tick: number; id: string }> = [];
    const beat = new Beat(app, {
      group: ns,
      schedule: [{ name: 'add', task: 'interop.py_add', args: [2, 3], every: 0.5, options: { queue } }],
      lease: leaseFor(await app.connection.transport(), ns),
      loglevel: 'critical',
    });
    beat.on('sent', (_entry, tick, id) => sent.push({ tick: tick.getTime(), id }));
    try {
      pythonWorker = spawn(pythonInterpreter, ['-m', 'celery', '-A', 'celery_app', 'worker', '-n', `py@${ns}`, '--pool', 'solo', '--without-mingle', '--without-gossip', '-l', 'warning'], {
        cwd: interopDir,
        env: { ...process.env, KQ_INTEROP_BROKER: pyBroker, KQ_INTEROP_BACKEND: backend, KQ_INTEROP_PY_QUEUE: queue, KQ_INTEROP_NAMESPACE: ns },
        stdio: 'ignore',
      });
      await beat.start();
      await waitFor(() => sent.length >= 2, 15_000, 'two ticks sent');
      for (const { tick, id } of sent.slice(0, 2)) {
        expect(id).toBe(beatTaskId(ns, 'add', tick));
        const result = await app.asyncResult<number>(id);
        expect(await result.get({ timeout: 30_000 })).toBe(5);
      }
    } finally {
      pythonWorker?.kill('SIGKILL');
      await beat.stop();
      const channel = await app.connection.channel();
      await channel.deleteQueue(queue).catch(() => undefined);
      if (kind === 'amqp') await channel.deleteQueue(`kq.beat.${ns}`).catch(() => undefined);
      else await ((await app.connection.transport()) as RedisTransport).redisStore.commands.del(`_kq.beat.${ns}.lease`, `_kq.beat.${ns}.epoch`, `_kq.beat.${ns}.state`);
      await app.close();
    }
  }, 60_000);
});
