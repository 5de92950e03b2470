import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Connection, type Delivery } from '@kq/core';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls, startRedisClusterOrSkip, waitFor } from '@kq/test-harness';
import { beatTaskId } from '../src/beat/index';
import { decodeTaskMessage } from '../src/protocol/index';

const here = dirname(fileURLToPath(import.meta.url));
const repositoryRoot = join(here, '..', '..', '..');
const beatScript = join(here, 'fixtures', 'beat', 'beat-process.ts');

/** A beat child process and what it reported. */
interface BeatProcess {
  readonly name: string;
  readonly child: ChildProcessWithoutNullStreams;
  readonly elected: number[];
  readonly sent: Array<{ tick: number; id: string }>;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  stderr: string;
}

function startBeat(name: string, broker: string, group: string, queue: string): BeatProcess {
  // `node --import tsx` (not the tsx CLI): SIGKILL must kill the process that holds the lease, not a wrapper.
  const child = spawn(process.execPath, ['--import', 'tsx', beatScript, broker, group, queue], {
    cwd: repositoryRoot,
    env: { ...process.env, TSX_TSCONFIG_PATH: join(repositoryRoot, 'tsconfig.json') },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const beat: BeatProcess = {
    name,
    child,
    elected: [],
    sent: [],
    stderr: '',
    ready: Promise.resolve(),
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  child.stderr.on('data', (chunk: Buffer) => (beat.stderr += chunk.toString()));
  (beat as { ready: Promise<void> }).ready = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const [word, a, b] = line.split(' ');
      if (word === 'ready') resolve();
      else if (word === 'elected') beat.elected.push(Number(a));
      else if (word === 'sent') beat.sent.push({ tick: Number(a), id: b as string });
    });
    child.once('exit', (code, signal) => reject(new Error(`beat ${name} exited (${code ?? signal}) before it was ready:\n${beat.stderr}`)));
  });
  return beat;
}

function alive(beat: BeatProcess): boolean {
  return beat.child.exitCode === null && beat.child.signalCode === null;
}

/** Takes every message of `queue` and returns the task ids (and checks each is a Celery task message for proj.tick). */
async function drainTaskIds(connection: Connection, queue: string): Promise<string[]> {
  const channel = await connection.channel();
  const ids: string[] = [];
  for (;;) {
    const delivery: Delivery | null = await channel.get(queue, { noAck: true });
    if (!delivery) return ids;
    const message = decodeTaskMessage(delivery);
    expect(message.name).toBe('proj.tick');
    expect(message.args).toEqual([1]);
    ids.push(message.id);
  }
}

// Redis Cluster: a 3-master cluster of this file's own, where the tick's record and its push cannot share a script.
const cluster = await startRedisClusterOrSkip();
afterAll(async () => {
  await cluster?.destroy();
});

const brokers = [
  { kind: 'redis' as const, url: `${brokerUrls.redis.replace(/\/\d*$/, '')}/0`, up: await brokerReachable('redis') },
  { kind: 'amqp' as const, url: brokerUrls.amqp, up: await brokerReachable('amqp') },
  { kind: 'redis-cluster' as const, url: cluster?.url ?? '', up: cluster !== undefined },
];

describe.concurrent.each(brokers)('kq beat failover on $kind', ({ kind, url, up }) => {
  it.skipIf(!up)(
    'a follower takes over when the leader is SIGKILLed, and every tick is sent exactly once',
    async () => {
      const group = `beat-failover-${kind}-${randomUUID()}`;
      const queue = `${group}.tasks`;
      const startedAt = Date.now();
      const beats = [startBeat('first', url, group, queue), startBeat('second', url, group, queue)] as const;
      const connection = new Connection(url);
      try {
        await Promise.all(beats.map((beat) => beat.ready));

        // Let the leader send a few ticks (1 s interval), then kill it without warning.
        await waitFor(() => beats[0].sent.length + beats[1].sent.length >= 2, 15_000, 'the leader sends two ticks');
        const [leader, follower] = beats[0].sent.length > 0 ? beats : [beats[1], beats[0]];
        expect(follower.sent).toEqual([]);
        leader.child.kill('SIGKILL');
        await leader.exited;
        const killedAt = Date.now();

        // The follower is elected within seconds and goes on sending.
        await waitFor(() => follower.elected.length > 0, 10_000, 'the follower is elected');
        await waitFor(() => follower.sent.length >= 2, 10_000, 'the new leader sends two ticks');
        expect(Math.max(...follower.elected)).toBeGreaterThan(Math.max(...leader.elected));
        follower.child.stdin.end('stop\n');
        await follower.exited;
        const stoppedAt = Date.now();

        const ids = await drainTaskIds(connection, queue);
        // Every id is a tick's deterministic id: map them back to their ticks.
        const tickOf = new Map<string, number>();
        for (let tick = Math.floor(startedAt / 1000) * 1000 - 5000; tick <= stoppedAt + 5000; tick += 1000) tickOf.set(beatTaskId(group, 'tick', tick), tick);
        const ticks = ids.map((id) => tickOf.get(id));
        expect(ticks).not.toContain(undefined);
        const sorted = (ticks as number[]).sort((a, b) => a - b);
        // No duplicates, no gaps: one message per second from the first tick to the last, across the failover.
        expect(new Set(ids).size).toBe(ids.length);
        expect(sorted.length).toBe((sorted[sorted.length - 1]! - sorted[0]!) / 1000 + 1);
        expect(sorted[0]!).toBeLessThan(killedAt);
        expect(sorted[sorted.length - 1]!).toBeGreaterThan(killedAt);
        // What the processes reported agrees with the queue (the killed one may not have printed its last send).
        for (const { id } of [...leader.sent, ...follower.sent]) expect(ids).toContain(id);
      } finally {
        for (const beat of beats) if (alive(beat)) beat.child.kill('SIGKILL');
        await Promise.all(beats.map((beat) => beat.exited));
        const channel = await connection.channel();
        await channel.deleteQueue(queue);
        if (kind === 'amqp') await channel.deleteQueue(`kq.beat.${group}`);
        else if (kind === 'redis') {
          const redis = ((await connection.transport()) as RedisTransport).redisStore.commands;
          await redis.del(`_kq.beat.${group}.lease`, `_kq.beat.${group}.epoch`, `_kq.beat.${group}.state`);
        }
        await connection.close();
      }
    },
    45_000,
  );
});
