import { randomUUID } from 'node:crypto';
import {
  encodeEnvelope,
  storedMessage,
  ExchangeNotFound,
  KqError,
  routeMessage,
  type BeatLease,
  type BeatLeaseListener,
  type BeatLeaseOptions,
  type CommitOutcome,
  type Exchange,
  type TickCommit,
  type TickPublication,
} from '@kq/core';
import type pg from 'pg';
import type { PostgresStore } from './postgres-store';

/** What the lease uses of `PostgresTransport` (which fits it): its store, connecting, and Kombu's routing. */
export interface BeatLeaseHost {
  readonly postgresStore: PostgresStore;
  connect(): Promise<unknown>;
  findExchange(name: string): Promise<Exchange | undefined>;
  priorityStep(priority: unknown): number;
}

/*
 * kq beat's leader lease and schedule state in PostgreSQL (core's `BeatLease` contract, `PostgresTransport.beatLease`),
 * in two tables of kq's own beside the message table (`<message table>_kq_beat…`), which Kombu never reads:
 *
 *   <m>_kq_beat       grp → epoch, holder, expires_at   the lease: a row per schedule group, taken over once expired
 *   <m>_kq_beat_tick  (grp, entry) → tick (epoch ms)     the last committed tick of each entry
 *
 * Every time comparison uses the server's clock (clock_timestamp()), so the processes' clocks do not matter. Taking
 * the lease bumps the epoch, the fencing token. A commit is one transaction: it locks the lease row and checks it is
 * still the caller's, unexpired (else `fenced`), records the tick only if later than the recorded one (else `stale`),
 * and inserts the tick's messages into their queues' rows — the state and the messages exist together or not at all.
 * A takeover waits for a commit holding the row lock, and a commit after a takeover finds another holder.
 */

interface Held {
  readonly epoch: number;
  readonly controller: AbortController;
  /** Local time of the last confirmed renewal: past `leaseMs` of it, the lease may be someone else's. */
  renewedAt: number;
}

/** The tables one lease uses (for operators and tests). */
export interface PostgresBeatTables {
  readonly lease: string;
  readonly ticks: string;
}

/**
 * Leader election with fencing for kq beat on PostgreSQL: a lease row with an expiry and an epoch, renewed by the
 * leader, and a commit transaction only the current holder gets through. Uses the transport's pool and tables (the
 * same database that holds the queues, which is what makes the commit atomic).
 */
export class PostgresBeatLease implements BeatLease {
  readonly kind = 'postgres';
  readonly tables: PostgresBeatTables;
  readonly #transport: BeatLeaseHost;
  readonly #options: BeatLeaseOptions;
  readonly #holder = randomUUID();
  #listener: BeatLeaseListener | undefined;
  #held: Held | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #busy: Promise<void> | undefined;
  #created: Promise<void> | undefined;

  constructor(transport: BeatLeaseHost, options: BeatLeaseOptions) {
    if (!(options.leaseMs > 0) || !(options.renewIntervalMs > 0) || options.renewIntervalMs >= options.leaseMs) {
      throw new KqError(`A beat lease needs 0 < renewIntervalMs < leaseMs; got renewIntervalMs ${options.renewIntervalMs}, leaseMs ${options.leaseMs}.`);
    }
    this.#transport = transport;
    this.#options = options;
    const message = transport.postgresStore.tables.message;
    this.tables = { lease: `${message}_kq_beat`, ticks: `${message}_kq_beat_tick` };
  }

  async start(listener: BeatLeaseListener): Promise<void> {
    this.#listener = listener;
    this.#running = true;
    await this.#transport.connect();
    await this.#createTables();
    await this.#step();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#busy?.catch(() => undefined);
    const held = this.#held;
    if (!held) return;
    this.#depose(new KqError('This beat stopped and released its lease.'));
    try {
      await this.#pool().query(`UPDATE ${this.tables.lease} SET holder = NULL WHERE grp = $1 AND epoch = $2 AND holder = $3`, [
        this.#options.group,
        held.epoch,
        this.#holder,
      ]);
    } catch (error) {
      this.#listener?.error(asError(error, 'could not release the beat lease (it will expire)'));
    }
  }

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#busy = this.#step().finally(() => {
        this.#busy = undefined;
        this.#schedule();
      });
    }, this.#options.renewIntervalMs);
    this.#timer.unref();
  }

  /** One beat of the lease: the leader renews, a follower tries to acquire. Never throws. */
  async #step(): Promise<void> {
    if (!this.#running) return;
    const held = this.#held;
    const { group, leaseMs } = this.#options;
    try {
      if (held) {
        const { rowCount } = await this.#pool().query(
          `UPDATE ${this.tables.lease} SET expires_at = clock_timestamp() + make_interval(secs => $4::float8 / 1000)
           WHERE grp = $1 AND epoch = $2 AND holder = $3 AND expires_at > clock_timestamp()`,
          [group, held.epoch, this.#holder, leaseMs],
        );
        if (rowCount === 1) held.renewedAt = Date.now();
        else this.#depose(new KqError(`The beat lease (epoch ${held.epoch}) was taken over or expired.`));
        return;
      }
      const acquiredAt = Date.now();
      // A free, expired or (after a failed renewal) still-our-own lease is taken, with the next epoch.
      const { rows } = await this.#pool().query<{ epoch: string }>(
        `INSERT INTO ${this.tables.lease} AS l (grp, epoch, holder, expires_at)
         VALUES ($1, 1, $2, clock_timestamp() + make_interval(secs => $3::float8 / 1000))
         ON CONFLICT (grp) DO UPDATE SET epoch = l.epoch + 1, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE l.holder IS NULL OR l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp()
         RETURNING epoch`,
        [group, this.#holder, leaseMs],
      );
      const epoch = rows[0] ? Number(rows[0].epoch) : 0;
      if (epoch > 0 && this.#running) await this.#elect(epoch, acquiredAt);
    } catch (error) {
      this.#listener?.error(asError(error, held ? 'could not renew the beat lease' : 'could not try to acquire the beat lease'));
      // Unable to renew for a whole lease period: someone else may hold it now, so stop acting as leader.
      if (held && this.#held === held && Date.now() - held.renewedAt >= leaseMs - this.#options.renewIntervalMs) {
        this.#depose(new KqError('Could not renew the beat lease in time (PostgreSQL unreachable).'));
      }
    }
  }

  async #elect(epoch: number, acquiredAt: number): Promise<void> {
    // Read after acquiring: no earlier leader can commit any more, so this state is final for them.
    const { rows } = await this.#pool().query<{ entry: string; tick: string }>(`SELECT entry, tick FROM ${this.tables.ticks} WHERE grp = $1`, [
      this.#options.group,
    ]);
    const lastTicks = new Map(rows.map((row) => [row.entry, Number(row.tick)] as const));
    const held: Held = { epoch, controller: new AbortController(), renewedAt: acquiredAt };
    this.#held = held;
    this.#listener?.elected({ epoch, lastTicks, signal: held.controller.signal, commit: (record) => this.#commit(held, record) });
  }

  #depose(reason: Error): void {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    held.controller.abort(reason);
    this.#listener?.deposed(reason);
  }

  async #commit(held: Held, record: TickCommit): Promise<CommitOutcome> {
    if (held.controller.signal.aborted || this.#held !== held) return 'fenced';
    const copies = record.publish ? await this.#copies(record.publish) : undefined;
    const client = await this.#pool().connect();
    let outcome: CommitOutcome;
    try {
      await client.query('BEGIN');
      outcome = await this.#commitIn(client, held, record, copies);
      await client.query(outcome === 'committed' ? 'COMMIT' : 'ROLLBACK');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    if (outcome === 'fenced') this.#depose(new KqError(`A commit of beat epoch ${held.epoch} was fenced off: another process holds the lease now.`));
    return outcome;
  }

  async #commitIn(client: pg.PoolClient, held: Held, record: TickCommit, copies: MessageCopies | undefined): Promise<CommitOutcome> {
    const { group } = this.#options;
    // The row lock makes a takeover wait for this commit, and this commit see a takeover that came first.
    const lease = await client.query(
      `SELECT 1 FROM ${this.tables.lease} WHERE grp = $1 AND epoch = $2 AND holder = $3 AND expires_at > clock_timestamp() FOR UPDATE`,
      [group, held.epoch, this.#holder],
    );
    if (lease.rowCount !== 1) return 'fenced';
    const recorded = await client.query(
      `INSERT INTO ${this.tables.ticks} AS t (grp, entry, tick) VALUES ($1, $2, $3)
       ON CONFLICT (grp, entry) DO UPDATE SET tick = EXCLUDED.tick WHERE t.tick < EXCLUDED.tick`,
      [group, record.entry, record.tick],
    );
    if (recorded.rowCount !== 1) return 'stale';
    if (copies && copies.queues.length > 0) await this.#insert(client, copies);
    return 'committed';
  }

  /** Where the tick's message goes, routed as the channel routes a publish (docs/wire.md#exchanges-and-bindings). */
  async #copies(publish: TickPublication): Promise<MessageCopies> {
    const { exchange, routingKey, message } = publish;
    let queues: string[];
    if (exchange === '') {
      queues = [routingKey];
    } else {
      const declared = await this.#transport.findExchange(exchange);
      if (!declared) throw new ExchangeNotFound(exchange);
      queues = routeMessage(declared.type, await this.#transport.postgresStore.listBindings(exchange), routingKey, message.headers);
    }
    return { queues, payloads: queues.map(() => encodeEnvelope(storedMessage(exchange, routingKey, message))), priority: this.#transport.priorityStep(message.properties.priority) };
  }

  /**
   * The copies as ready message rows, created as the store's publishes create them (queue rows made when missing, as
   * Kombu's `_get_or_create`; ids from Kombu's sequence), but on the commit's own connection, inside its transaction.
   */
  async #insert(client: pg.PoolClient, copies: MessageCopies): Promise<void> {
    const { queue, message } = this.#transport.postgresStore.tables;
    await client.query(
      `WITH rows AS (SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(queue, payload, n)),
       created AS (
         INSERT INTO ${queue} (id, name) SELECT nextval('queue_id_sequence'), name FROM (SELECT DISTINCT queue AS name FROM rows) d
         ON CONFLICT (name) DO NOTHING RETURNING id, name),
       q AS (SELECT id, name FROM created UNION ALL SELECT id, name FROM ${queue} WHERE name IN (SELECT queue FROM rows))
       INSERT INTO ${message} (id, visible, "timestamp", payload, version, queue_id, kq_priority, kq_due_at)
       SELECT nextval('message_id_sequence'), true, NULL, r.payload, 1, (SELECT id FROM q WHERE q.name = r.queue LIMIT 1), $3, NULL
       FROM rows r ORDER BY r.n`,
      [copies.queues, copies.payloads, copies.priority],
    );
  }

  /** The lease's two tables, made once per database (under an advisory lock: two first processes may race). */
  #createTables(): Promise<void> {
    this.#created ??= (async () => {
      const client = await this.#pool().connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.tables.lease]);
        await client.query(`CREATE TABLE IF NOT EXISTS ${this.tables.lease} (grp TEXT PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT, expires_at TIMESTAMPTZ NOT NULL)`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${this.tables.ticks} (grp TEXT NOT NULL, entry TEXT NOT NULL, tick BIGINT NOT NULL, PRIMARY KEY (grp, entry))`);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    })().catch((error: unknown) => {
      this.#created = undefined;
      throw error;
    });
    return this.#created;
  }

  #pool(): pg.Pool {
    return this.#transport.postgresStore.pool;
  }
}

interface MessageCopies {
  queues: string[];
  /** One envelope per queue: each copy gets its own Kombu delivery tag, as the channel gives each queue its own. */
  payloads: string[];
  priority: number;
}

function asError(error: unknown, context: string): Error {
  return new KqError(`${context}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
