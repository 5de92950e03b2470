// The orchestrator's own view of the brokers: wiping the benchmark's Redis database, purging its RabbitMQ queues, and
// counting what is still queued or unacknowledged after a run — read from each system's storage, not taken from
// the runner's word.
import { connect, type Channel, type ChannelModel } from 'amqplib';
import { readFileSync, readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { findProcesses, parentOf, processTreeCpuUs, serverCpuUs } from './process-tree';
import { postgresUrlFor, type SystemId } from './systems';

/** What a queue still holds: waiting messages, deliveries taken but not acked, and failed jobs. */
export interface Leftover {
  queued: number;
  unacked: number;
  failed: number;
}

export class RedisAdmin {
  readonly #redis: Redis;
  readonly db: number;

  private constructor(redis: Redis, db: number) {
    this.#redis = redis;
    this.db = db;
  }

  /** Connects to the benchmark's database; refuses database 0, which is where people keep real data. */
  static async open(url: string): Promise<RedisAdmin> {
    const db = Number(new URL(url).pathname.replace(/^\//, '') || '0');
    if (!Number.isInteger(db) || db === 0) {
      throw new Error(`The benchmark flushes its Redis database between cases; give it one of its own, e.g. --redis-url redis://127.0.0.1:6379/15 (got ${url}).`);
    }
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 5000 });
    redis.on('error', () => undefined); // surfaced by the commands that fail
    await redis.connect();
    return new RedisAdmin(redis, db);
  }

  async version(): Promise<string> {
    const info = await this.#redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  }

  /**
   * CPU the redis-server process has used since it started, µs: the run time of all its threads from
   * /proc/<pid>/task/<tid>/schedstat (utime + stime at nanosecond resolution, where /proc/<pid>/stat counts 10 ms
   * ticks). Unlike `INFO commandstats` it counts what Redis really did once — a script's inner commands, a MULTI's
   * queued ones, the event loop, reading and writing the sockets — the same way for every system. Null when the server
   * is not a process of this machine (its `process_id` is not in /proc, e.g. another host or a container).
   */
  async processCpuUs(): Promise<number | null> {
    const info = await this.#redis.info('server');
    const pid = /process_id:(\d+)/.exec(info)?.[1];
    if (pid === undefined) return null;
    try {
      let ns = 0;
      for (const task of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      // A process of the same id in another PID namespace would be someone else's: the name must match.
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('redis-server')) return null;
      return ns / 1000;
    } catch {
      return null;
    }
  }

  /** Zeroes Redis's command statistics (`CONFIG RESETSTAT`), so the next reading is one case's. */
  async resetStats(): Promise<void> {
    await this.#redis.config('RESETSTAT');
  }

  /** CPU Redis spent running commands since the last reset, µs (the sum of `INFO commandstats` usec). */
  async commandUsec(): Promise<number> {
    const info = await this.#redis.info('commandstats');
    let total = 0;
    for (const match of info.matchAll(/usec=(\d+)/g)) total += Number(match[1]);
    return total;
  }

  /**
   * Redis's command time since the last reset, command by command (`INFO commandstats`): calls and µs — which
   * commands a system's tasks cost Redis, for the targets' explanations.
   */
  async commandStats(): Promise<Record<string, { calls: number; usec: number }>> {
    const info = await this.#redis.info('commandstats');
    const stats: Record<string, { calls: number; usec: number }> = {};
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) stats[match[1] as string] = { calls: Number(match[2]), usec: Number(match[3]) };
    return stats;
  }

  /**
   * Bytes Redis holds per queued task, read from what the system stored (the first queued one): a Kombu envelope
   * (kq, Celery, the raw rows), bee-queue's job hash value plus its id in the waiting list, BullMQ's job hash. Null
   * when nothing is queued.
   */
  async bytesPerTask(system: SystemId, queue: string): Promise<number | null> {
    const r = this.#redis;
    switch (system) {
      case 'bee-queue': {
        const id = await r.lindex(`bq:${queue}:waiting`, 0);
        return id === null ? null : Buffer.byteLength(id) + (await r.hstrlen(`bq:${queue}:jobs`, id));
      }
      case 'bullmq': {
        const id = await r.lindex(`bull:${queue}:wait`, 0);
        if (id === null) return null;
        const fields = await r.hgetall(`bull:${queue}:${id}`);
        return Buffer.byteLength(id) + Object.entries(fields).reduce((sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value), 0);
      }
      default: {
        const item = await r.lindexBuffer(queue, 0);
        return item === null ? null : item.length;
      }
    }
  }

  /** FLUSHDB of the benchmark's database only (never FLUSHALL). */
  async flush(): Promise<void> {
    await this.#redis.flushdb();
  }

  async leftover(system: SystemId, queue: string): Promise<Leftover> {
    const r = this.#redis;
    switch (system) {
      case 'bullmq': {
        const [wait, paused, prioritized, active, failed] = await Promise.all([
          r.llen(`bull:${queue}:wait`),
          r.llen(`bull:${queue}:paused`),
          r.zcard(`bull:${queue}:prioritized`),
          r.llen(`bull:${queue}:active`),
          r.zcard(`bull:${queue}:failed`),
        ]);
        return { queued: wait + paused + prioritized, unacked: active, failed };
      }
      case 'bee-queue': {
        const [waiting, active, failed] = await Promise.all([r.llen(`bq:${queue}:waiting`), r.llen(`bq:${queue}:active`), r.scard(`bq:${queue}:failed`)]);
        return { queued: waiting, unacked: active, failed };
      }
      default: {
        // Kombu's layout (kq, Python Celery, celery.node, the raw baseline): the queue is a list, taken messages
        // wait for their ack in the `unacked` hash.
        const [queued, unacked] = await Promise.all([r.llen(queue), r.hlen('unacked')]);
        return { queued, unacked, failed: 0 };
      }
    }
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}

export class AmqpAdmin {
  readonly #connection: ChannelModel;
  #channel: Channel | undefined;

  private constructor(connection: ChannelModel) {
    this.#connection = connection;
  }

  static async open(url: string): Promise<AmqpAdmin> {
    const connection = await connect(url);
    connection.on('error', () => undefined);
    return new AmqpAdmin(connection);
  }

  get version(): string {
    const version = this.#connection.connection.serverProperties.version;
    return typeof version === 'string' ? version : 'unknown';
  }

  /** Deletes the case's queue and the exchange of the same name that Celery-style clients declare. */
  async purge(queue: string): Promise<void> {
    await this.#use((channel) => channel.deleteQueue(queue));
    await this.#use((channel) => channel.deleteExchange(queue));
  }

  /** Deletes queues (missing ones are fine), pipelined on one channel. */
  async deleteQueues(names: readonly string[]): Promise<void> {
    await this.#use((channel) => Promise.all(names.map((name) => channel.deleteQueue(name))));
  }

  /**
   * CPU RabbitMQ's Erlang VM (`beam.smp`) has used, µs, read from /proc — when it runs on this machine and is the
   * only one (with several, which one serves the benchmark is not known: null). Per task, it is the broker's work
   * for each message, as Redis's command time is on Redis (though it also counts the VM's own housekeeping).
   */
  brokerCpuUs(): number | null {
    const beams = findProcesses('beam.smp');
    return beams.length === 1 ? processTreeCpuUs(beams[0]) : null;
  }

  async leftover(queue: string): Promise<Leftover> {
    // Deliveries nobody acked went back to the queue when their consumer's connection closed.
    const stats = await this.#use((channel) => channel.checkQueue(queue));
    return { queued: stats?.messageCount ?? 0, unacked: 0, failed: 0 };
  }

  async close(): Promise<void> {
    await this.#connection.close().catch(() => undefined);
  }

  /** Runs one operation; a channel error (a 404, say) closes the channel, so the next operation opens a new one. */
  async #use<T>(operation: (channel: Channel) => Promise<T>): Promise<T | undefined> {
    if (!this.#channel) {
      this.#channel = await this.#connection.createChannel();
      this.#channel.on('error', () => undefined);
    }
    const channel = this.#channel;
    try {
      return await operation(channel);
    } catch (error) {
      this.#channel = undefined;
      await channel.close().catch(() => undefined);
      if (/NOT_FOUND|404/.test(String(error))) return undefined;
      throw error;
    }
  }
}

/** What the server spent over a window, read before and after it: server CPU, WAL written, commits in the database. */
export interface PostgresReading {
  /** CPU of the whole server (postmaster, backends, their reaped children), µs; null when not on this machine. */
  cpuUs: number | null;
  /** The WAL insert position, bytes from 0/0. */
  walBytes: number;
  /** Transactions committed in the system's own database (`pg_stat_database.xact_commit`). */
  commits: number;
}

/**
 * The benchmark's PostgreSQL databases: kq's (created if missing, as Redis gets a database of its own) and one per
 * peer (pg-boss, graphile-worker: {@link postgresUrlFor}). Purges a case's queue, counts what is left — in Kombu's
 * `kombu_message` table, pg-boss's `pgboss.job`, graphile-worker's jobs table — and reads what the server spent.
 */
export class PostgresAdmin {
  readonly #base: string;
  readonly #clients = new Map<SystemId, pg.Client>();
  /** The postmaster's pid when the server runs on this machine (its CPU is read from /proc). */
  #postmaster: number | null | undefined;

  private constructor(base: string) {
    this.#base = base;
  }

  static async open(url: string): Promise<PostgresAdmin> {
    const database = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
    if (database === '' || database === 'postgres') {
      throw new Error(`The benchmark deletes rows in its PostgreSQL database; give it one of its own, e.g. --postgres-url postgresql://postgres@127.0.0.1:5432/kqbench (got ${url}).`);
    }
    const admin = new PostgresAdmin(url);
    await admin.#client('kq');
    return admin;
  }

  async #client(system: SystemId): Promise<pg.Client> {
    const known = this.#clients.get(system);
    if (known) return known;
    const url = postgresUrlFor(this.#base, system);
    let client: pg.Client;
    try {
      client = await connectTo(url);
    } catch (error) {
      if ((error as { code?: string }).code !== '3D000') throw error; // 3D000: no such database
      const server = new URL(url);
      const database = decodeURIComponent(server.pathname.replace(/^\//, ''));
      server.pathname = '/postgres';
      const admin = await connectTo(server.toString());
      try {
        await admin.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
      } finally {
        await admin.end();
      }
      client = await connectTo(url);
    }
    this.#clients.set(system, client);
    return client;
  }

  async version(): Promise<string> {
    const { rows } = await (await this.#client('kq')).query<{ server_version: string }>('SHOW server_version');
    return rows[0]?.server_version ?? 'unknown';
  }

  /**
   * Deletes the case's jobs or messages (each system makes its tables on first use; none yet is fine), then vacuums
   * the system's table, outside the timed window. A server with autovacuum off (the benchmark machine's is) otherwise
   * keeps every earlier run's dead rows in the peers' tables, and they slow down run by run: after one session
   * pg-boss's job table held 1.8 million dead rows and its drain ran at 4,380 tasks/s against 11,386 on a fresh table.
   * kq's store vacuums its own table as it goes (and pays for it inside its runs); the peers leave it to autovacuum,
   * which a production server runs.
   */
  async purge(system: SystemId, queue: string): Promise<void> {
    const client = await this.#client(system);
    const table = JOB_TABLES[system] ?? 'kombu_message';
    if (!(await tableExists(client, table))) return;
    if (system === 'pg-boss') await client.query('DELETE FROM pgboss.job WHERE name = $1', [queue]);
    else if (system === 'graphile-worker') await client.query('DELETE FROM graphile_worker._private_jobs');
    else await client.query('DELETE FROM kombu_message WHERE queue_id IN (SELECT id FROM kombu_queue WHERE name = $1)', [queue]);
    await client.query(`VACUUM (ANALYZE) ${table}`);
  }

  async leftover(system: SystemId, queue: string): Promise<Leftover> {
    const client = await this.#client(system);
    const table = JOB_TABLES[system] ?? 'kombu_message';
    if (!(await tableExists(client, table))) return { queued: 0, unacked: 0, failed: 0 };
    const { rows } = await client.query<{ queued: string; unacked: string; failed: string }>(
      system === 'pg-boss'
        ? `SELECT count(*) FILTER (WHERE state IN ('created', 'retry')) AS queued, count(*) FILTER (WHERE state = 'active') AS unacked,
                  count(*) FILTER (WHERE state = 'failed') AS failed FROM pgboss.job WHERE name = $1`
        : system === 'graphile-worker'
          ? // One database per peer and one case at a time: every job in it is the case's. A job that failed waits
            // for its retry with last_error set.
            `SELECT count(*) FILTER (WHERE locked_at IS NULL AND last_error IS NULL) AS queued, count(*) FILTER (WHERE locked_at IS NOT NULL) AS unacked,
                    count(*) FILTER (WHERE locked_at IS NULL AND last_error IS NOT NULL) AS failed FROM graphile_worker._private_jobs WHERE $1::text IS NOT NULL`
          : `SELECT count(*) FILTER (WHERE m.visible) AS queued, count(*) FILTER (WHERE NOT m.visible) AS unacked, 0 AS failed
               FROM kombu_message m JOIN kombu_queue q ON q.id = m.queue_id WHERE q.name = $1`,
      [queue],
    );
    return { queued: Number(rows[0]?.queued ?? 0), unacked: Number(rows[0]?.unacked ?? 0), failed: Number(rows[0]?.failed ?? 0) };
  }

  /**
   * The server's CPU, its WAL position and the commits in `system`'s database, now. Commit counts reach
   * pg_stat_database when a backend flushes its statistics (at most once a second, and when it ends), so the
   * reading that closes a window is taken after {@link settleStats}.
   */
  async read(system: SystemId): Promise<PostgresReading> {
    const client = await this.#client(system);
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ wal: string; commits: string; backend: number }>(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal, pg_backend_pid() AS backend,
              (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`,
    );
    const row = rows[0];
    if (this.#postmaster === undefined) this.#postmaster = row ? onThisMachine(this.#base, row.backend) : null;
    return {
      cpuUs: this.#postmaster === null ? null : serverCpuUs(this.#postmaster),
      walBytes: Number(row?.wal ?? 0),
      commits: Number(row?.commits ?? 0),
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((client) => client.end().catch(() => undefined)));
    this.#clients.clear();
  }
}

/** Where each PostgreSQL peer keeps its jobs (kq: Kombu's `kombu_message`). */
const JOB_TABLES: Partial<Record<SystemId, string>> = { 'pg-boss': 'pgboss.job', 'graphile-worker': 'graphile_worker._private_jobs' };

/** How long the backends' statistics take to reach pg_stat_database (PostgreSQL flushes them at most once a second). */
export const POSTGRES_STATS_SETTLE_MS = 1100;

async function connectTo(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined); // surfaced by the queries that fail
  await client.connect();
  return client;
}

async function tableExists(client: pg.Client, table: string): Promise<boolean> {
  const { rows } = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [table]);
  return rows[0]?.exists === true;
}

/** The postmaster of a backend that runs on this machine (the server's CPU is then read from /proc), or null. */
function onThisMachine(url: string, backend: number): number | null {
  const host = new URL(url).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1' && host !== '') return null;
  const postmaster = parentOf(backend);
  return postmaster !== null && postmaster > 1 ? postmaster : null;
}
