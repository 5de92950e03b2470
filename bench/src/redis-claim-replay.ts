// Replays the steady state of a concurrency-100 drain against a private redis-server, once with the claim script and
// once with native commands only (LMOVE into an in-flight list, then a MULTI of HSET/ZADD/DEL), and prints Redis's
// own CPU per task (/proc utime+stime and schedstat of the server process) beside the `INFO commandstats` total.
// Usage: tsx src/redis-claim-replay.ts [port] [rounds]   (starts and stops its own redis-server on that port)
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { celeryRedisEnvelope } from './celery-task-message';

const LUA = new URL('../../packages/redis/lua/', import.meta.url);
function script(name: string): { source: string; sha: string; run: (redis: Redis, keys: string[], args: Array<string | number>) => Promise<unknown> } {
  const source = ['prelude', name].map((file) => readFileSync(new URL(`${file}.lua`, LUA), 'utf8')).join('\n');
  const sha = createHash('sha1').update(source).digest('hex');
  return {
    source,
    sha,
    run: async (redis, keys, args) => {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch {
        return await redis.eval(source, keys.length, ...keys, ...args);
      }
    },
  };
}
const CLAIM = script('claim');
const ACK = script('ack');

const port = Number(process.argv[2] ?? 6395);
const rounds = Number(process.argv[3] ?? 5);
const TASKS = 3000;
const PAD = Number(process.env.PAD ?? 330);
const BATCH = 64;
const ACK_LAG = 6;
const LEASE_US = 1_800_000_000;
const VT_US = 3_600_000_000;

function cpuOf(pid: number): { ticksUs: number; schedNs: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  let schedNs = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) schedNs += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  return { ticksUs: (ticks * 1e6) / 100, schedNs };
}

async function commandUsec(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/usec=(\d+)/g)) total += Number(match[1]);
  return total;
}

function envelopes(): string[] {
  const out: string[] = [];
  for (let n = 0; n < TASKS; n++) {
    const id = `${String(n).padStart(8, '0')}-1111-2222-3333-444455556666`;
    out.push(celeryRedisEnvelope({ id, task: 'bench.tasks.noop_with_a_longer_name', args: [n, 'x'.repeat(PAD)], queue: 'celery', origin: 'gen1@bench-host' }));
  }
  return out;
}

function pystr(value: string): string {
  return JSON.stringify(value);
}

interface Held { tag: string; score: string }

/** The claim script as the store calls it, acks of the batch claimed ACK_LAG calls before riding along. */
async function runScript(redis: Redis): Promise<void> {
  const pending: Held[][] = [];
  let drained = false;
  for (;;) {
    const acks = pending.length >= ACK_LAG || drained ? (pending.shift() ?? []) : [];
    const args: Array<string | number> = ['', '\x06\x16', BATCH, 0, LEASE_US, VT_US, 1, 0, 1, 'celery', 0, acks.length];
    for (const ack of acks) args.push(ack.tag, ack.score);
    args.push('');
    const [taken, , , score] = (await CLAIM.run(redis, ['unacked', 'unacked_index', 'quarantine'], args)) as [string[], string[], number[], string];
    const held: Held[] = [];
    for (let at = 0; at < taken.length; at += 4) held.push({ tag: taken[at + 3] as string, score });
    if (held.length === 0) drained = true;
    if (held.length === 0 && acks.length === 0 && pending.length === 0) return;
    if (held.length > 0) pending.push(held);
  }
}

/** Native commands only: LMOVE ×k (+ the lagging acks as ACK script), then one MULTI that records them. */
async function runNative(redis: Redis, ackNative: boolean): Promise<void> {
  const pending: Held[][] = [];
  let drained = false;
  const inflight = '_kq.inflight.replay';
  for (;;) {
    const acks = pending.length >= ACK_LAG || drained ? (pending.shift() ?? []) : [];
    const pipe = redis.pipeline();
    if (acks.length > 0) {
      if (ackNative) {
        pipe.zmscore('unacked_index', ...acks.map((ack) => ack.tag));
      } else {
        const args: string[] = [];
        for (const ack of acks) args.push(ack.tag, ack.score);
        pipe.evalsha(ACK.sha, 2, 'unacked', 'unacked_index', ...args);
      }
    }
    for (let k = 0; k < BATCH; k++) pipe.lmove('celery', inflight, 'RIGHT', 'LEFT');
    const replies = (await pipe.exec()) ?? [];
    if (acks.length > 0 && ackNative) {
      const tags = acks.map((ack) => ack.tag);
      await redis.multi().zrem('unacked_index', ...tags).hdel('unacked', ...tags).exec();
    }
    const raws = replies.slice(acks.length > 0 ? 1 : 0).map(([, raw]) => raw as string | null).filter((raw): raw is string => raw !== null);
    if (raws.length === 0) {
      drained = true;
      if (acks.length === 0 && pending.length === 0) return;
      continue;
    }
    const us = Date.now() * 1000 + LEASE_US - VT_US;
    const s = Math.floor(us / 1e6);
    const score = `${s}.${String(us - s * 1e6).padStart(6, '0')}`;
    const index: string[] = [];
    const records: string[] = [];
    const held: Held[] = [];
    for (const raw of raws) {
      const env = JSON.parse(raw) as { properties: { delivery_tag: string; delivery_info: { exchange: string; routing_key: string } } };
      const tag = env.properties.delivery_tag;
      index.push(score, tag);
      records.push(tag, `[${raw}, ${pystr(env.properties.delivery_info.exchange)}, ${pystr(env.properties.delivery_info.routing_key)}]`);
      held.push({ tag, score });
    }
    await redis.multi().zadd('unacked_index', 'NX', 'inf', '_kq.pin: keeps unacked_index a skiplist, where a listpack would make every insert scan the whole set').zadd('unacked_index', ...index).hset('unacked', ...records).del(inflight).exec();
    pending.push(held);
  }
}

async function main(): Promise<void> {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const pid = server.pid as number;
  try {
    await sleep(300);
    const redis = new Redis({ port, host: '127.0.0.1' });
    await redis.script('LOAD', CLAIM.source);
    await redis.script('LOAD', ACK.source);
    const all = envelopes();
    console.log(`envelope ${Buffer.byteLength(all[0] as string)} bytes, ${TASKS} tasks × ${rounds} rounds, batches of ${BATCH}`);
    const variants: Array<[string, () => Promise<void>]> = [
      ['claim.lua (acks ride along)', () => runScript(redis)],
      ['native LMOVE + MULTI, ACK script', () => runNative(redis, false)],
      ['native LMOVE + MULTI, native acks', () => runNative(redis, true)],
    ];
    for (let r = 0; r < rounds; r++) {
      for (const [name, run] of variants) {
        await redis.flushall();
        for (let at = 0; at < TASKS; at += 500) await redis.lpush('celery', ...all.slice(at, at + 500));
        await redis.config('SET', 'lazyfree-lazy-user-flush', 'no');
        await redis.config('RESETSTAT');
        const before = cpuOf(pid);
        await run();
        const after = cpuOf(pid);
        const usec = await commandUsec(redis);
        const left = (await redis.llen('celery')) + (await redis.hlen('unacked'));
        console.log(
          `${name.padEnd(36)} proc ${((after.ticksUs - before.ticksUs) / TASKS).toFixed(1).padStart(5)} µs/task  sched ${((after.schedNs - before.schedNs) / 1000 / TASKS).toFixed(2).padStart(6)} µs/task  commandstats ${(usec / TASKS).toFixed(2).padStart(6)} µs/task  left ${left}`,
        );
      }
    }
    redis.disconnect();
  } finally {
    server.kill('SIGTERM');
  }
}

await main();
