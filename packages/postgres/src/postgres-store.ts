import { randomUUID } from 'node:crypto';
import {
  Exchange,
  Queue,
  StaleDeliveryError,
  sanitizeUrl,
  stableJson,
  tlsFailureOf,
  type BindingRecord,
  type Claim,
  type ClaimOptions,
  type ExchangeOptions,
  type QueueOptions,
  type RestoreOptions,
  type StoredMessage,
  type VirtualStore,
  type VirtualStoreFeatures,
} from '@kq/core';
import pg from 'pg';
import { AckBatcher } from './ack-batcher';
import { InsertBatcher } from './insert-batcher';
import { LeaseKeeper } from './lease-keeper';
import { PostgresClaimer, type PostgresClaim, type RemovedRow } from './postgres-claimer';
import type { ResolvedPostgresOptions } from './postgres-options';
import { ReadyListener } from './ready-listener';
import { migrate, tableNames, type TableNames } from './schema';
import { GENERIC_PLANS, withSessionSettings } from './session-settings';
import { TableVacuum } from './table-vacuum';

/** Connections that send acks, so a batch goes out while the previous one is still being answered. */
const ACK_CONNECTIONS = 3;
/** Connections for claims and lease upkeep (renewals, sweeps, promotions), whose commits need not wait for the disk. */
const CLAIM_CONNECTIONS = 2;
/**
 * Claims and lease upkeep commit without waiting for their WAL to reach the disk (`synchronous_commit = off`): one
 * lost in a crash leaves its rows as they were before it — ready, or held under a lease that runs out — so the
 * message is delivered again, as it would be anyway after a crash (a server that crashed has dropped every
 * consumer's connection, and their acks are refused). Acks do not wait either (see {@link ackPoolConfig}); publishes,
 * restores and results do.
 *
 * Bitmap and sequential scans are off for these sessions: every statement they run has an index made for it, and
 * a planner whose statistics are stale (a table filled since its last ANALYZE, autovacuum off) otherwise reads the
 * whole queue to take a few rows — a claim of 64 read and sorted 20,000 ready rows (12 ms against 1.5 ms), a
 * promotion of delayed rows scanned the table (29 ms against 0.1 ms).
 */
export function claimPoolConfig(connectionString: string): pg.PoolConfig {
  return {
    connectionString: withSessionSettings(connectionString, { ...GENERIC_PLANS, synchronous_commit: 'off', enable_bitmapscan: 'off', enable_seqscan: 'off' }),
    max: CLAIM_CONNECTIONS,
    min: CLAIM_CONNECTIONS,
    application_name: 'kq claims',
  };
}

/**
 * Acks commit without waiting for their WAL to reach the disk, as claims do: an ack lost in a crash leaves its row
 * held under the lease its claim took, which runs out, and the sweep returns the message to its queue, so it is
 * delivered again — at least once, as after a crash between a task's end and its ack. The WAL is written in order,
 * so a lost ack never leaves a later commit standing, and what was committed durably before it (the task's result,
 * whose store resolves only once it is on disk, before the ack is sent) stays. A worker then never waits for the
 * disk to settle a task (without results, never at all), and acks no longer queue for WAL flushes beside publishes.
 */
export function ackPoolConfig(connectionString: string): pg.PoolConfig {
  return {
    connectionString: withSessionSettings(connectionString, { ...GENERIC_PLANS, synchronous_commit: 'off' }),
    max: ACK_CONNECTIONS,
    min: ACK_CONNECTIONS,
    application_name: 'kq acks',
  };
}

/**
 * The `VirtualStore` on PostgreSQL, over Kombu's SQLAlchemy tables (`kombu_queue`, `kombu_message`). Python Celery
 * on `sqla+postgresql://` and kq share queues both ways: a message is a row whose payload is Kombu's JSON envelope,
 * read in Kombu's order. What kq adds lives in extra columns Kombu never reads:
 * - claims take rows with `FOR UPDATE SKIP LOCKED` in batches, fairly across queues and lowest priority step first;
 * - a claim holds a lease renewed by a heartbeat; an expired one is returned to its queue by any kq process (Kombu's
 *   transport marks rows invisible and never brings them back if its process dies);
 * - a settle names its claim token, so a claim that was taken back cannot be acked (`StaleDeliveryError`);
 * - delayed messages wait invisible with a due time and are promoted in SQL;
 * - a trigger NOTIFYs on every ready row, so idle consumers wake at once, for Python's inserts too.
 */
export class PostgresStore implements VirtualStore {
  readonly features: VirtualStoreFeatures = {
    priorities: true,
    delayedDelivery: true,
    crashRecovery: true,
    fanout: 'queued',
    pipelinedClaims: true,
  };
  readonly tables: TableNames;
  /** This store's name in `kq_holder`: the heartbeat renews every lease it holds in one statement. */
  readonly holder = `kq:${randomUUID()}`;
  readonly #options: ResolvedPostgresOptions;
  #pool: pg.Pool | undefined;
  /**
   * The acks' own connections: an ack never waits behind claims and lease renewals, nor behind the previous batch
   * — the time from a task's end to its ack being sent is the window in which a
   * crash runs a finished task again.
   */
  #ackPool: pg.Pool | undefined;
  #claimPool: pg.Pool | undefined;
  #listener: ReadyListener | undefined;
  #claimer: PostgresClaimer | undefined;
  #acks: AckBatcher | undefined;
  #inserts: InsertBatcher | undefined;
  readonly #leases: LeaseKeeper;
  readonly #vacuum: TableVacuum;

  constructor(options: ResolvedPostgresOptions) {
    this.#options = options;
    this.tables = tableNames(options.queueTable, options.messageTable);
    this.#leases = new LeaseKeeper({ ...options, tables: this.tables, holder: this.holder }, () => this.#claimPool);
    this.#vacuum = new TableVacuum({
      connectionString: options.connectionString,
      table: this.tables.message,
      everyDeletes: options.vacuumEveryDeletes,
      logger: options.logger,
    });
  }

  get pool(): pg.Pool {
    if (!this.#pool) throw new StaleDeliveryError('The PostgreSQL store is closed.');
    return this.#pool;
  }

  async open(): Promise<void> {
    // Connections are opened now and kept (min): the first acks of a new worker must not wait for a connection to be
    // made — a crash in that window would run finished tasks again.
    const connectionString = withSessionSettings(this.#options.connectionString, GENERIC_PLANS);
    const pool = new pg.Pool({ connectionString, max: this.#options.poolSize, min: this.#options.poolSize });
    const ackPool = new pg.Pool(ackPoolConfig(this.#options.connectionString));
    const claimPool = new pg.Pool(claimPoolConfig(this.#options.connectionString));
    // An idle pooled connection the server dropped must not crash the process; the next query reconnects.
    for (const each of [pool, ackPool, claimPool]) each.on('error', (error) => this.#options.logger.warn(`kq postgres: idle connection lost: ${error.message}`));
    try {
      const client = await pool.connect();
      try {
        await migrate(client, this.tables);
      } finally {
        client.release();
      }
      const warm = await Promise.all([
        ...Array.from({ length: Math.max(0, this.#options.poolSize - 1) }, () => pool.connect()),
        ...Array.from({ length: ACK_CONNECTIONS }, () => ackPool.connect()),
        ...Array.from({ length: CLAIM_CONNECTIONS }, () => claimPool.connect()),
      ]);
      for (const client of warm) client.release();
    } catch (error) {
      await Promise.all([pool, ackPool, claimPool].map((each) => each.end().catch(() => undefined)));
      // sslmode=verify-full against an untrusted, expired or misnamed certificate: one line naming it, never retried.
      throw tlsFailureOf(error, sanitizeUrl(this.#options.connectionString).split('?')[0] ?? '') ?? error;
    }
    this.#pool = pool;
    this.#ackPool = ackPool;
    this.#claimPool = claimPool;
    const listener = new ReadyListener({
      connectionString: this.#options.connectionString,
      channel: this.tables.readyChannel,
      onDue: (dueAt) => this.#leases.noteDue(dueAt),
      logger: this.#options.logger,
    });
    this.#listener = listener;
    this.#claimer = new PostgresClaimer(
      { tables: this.tables, holder: this.holder, leaseMs: this.#options.leaseMs, logger: this.#options.logger },
      {
        claims: () => this.#claimPool,
        statements: () => this.pool,
        listener,
        leases: this.#leases,
        deleted: (rows) => this.#vacuum.deleted(rows),
      },
    );
    this.#acks = new AckBatcher(ackPool, this.tables, ACK_CONNECTIONS, (rows) => this.#vacuum.deleted(rows));
    this.#inserts = new InsertBatcher(pool, this.tables);
    this.#leases.start();
  }

  async close(): Promise<void> {
    this.#leases.stop();
    await Promise.all([this.#acks?.flush(), this.#inserts?.flush()]);
    this.#inserts = undefined;
    await this.#listener?.stop();
    await this.#vacuum.close();
    const pools = [this.#pool, this.#ackPool, this.#claimPool];
    this.#pool = undefined;
    this.#ackPool = undefined;
    this.#claimPool = undefined;
    await Promise.all(pools.map((pool) => pool?.end()));
  }

  /** Stops heartbeats and drops the connections without settling anything: a crashed process, for tests. */
  terminate(): void {
    this.#leases.stop();
    void this.#listener?.stop();
    this.#inserts = undefined;
    this.#vacuum.terminate();
    const pools = [this.#pool, this.#ackPool, this.#claimPool];
    this.#pool = undefined;
    this.#ackPool = undefined;
    this.#claimPool = undefined;
    for (const pool of pools) void pool?.end().catch(() => undefined);
  }

  // ——— exchanges and bindings (kept in kq's tables so every process routes alike) ———

  async declareExchange(exchange: Exchange): Promise<void> {
    const declaration: ExchangeOptions = {
      type: exchange.type,
      durable: exchange.durable,
      autoDelete: exchange.autoDelete,
      internal: exchange.internal,
      arguments: { ...exchange.arguments },
    };
    if (exchange.deliveryMode !== undefined) declaration.deliveryMode = exchange.deliveryMode;
    await this.pool.query(`INSERT INTO ${this.tables.exchange} (name, declaration) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [
      exchange.name,
      JSON.stringify(declaration),
    ]);
  }

  async lookupExchange(name: string): Promise<Exchange | undefined> {
    const { rows } = await this.pool.query<{ declaration: string }>(`SELECT declaration FROM ${this.tables.exchange} WHERE name = $1`, [name]);
    const row = rows[0];
    return row ? new Exchange(name, JSON.parse(row.declaration) as ExchangeOptions) : undefined;
  }

  async deleteExchange(name: string): Promise<void> {
    await this.pool.query(
      `WITH gone AS (DELETE FROM ${this.tables.binding} WHERE exchange = $1) DELETE FROM ${this.tables.exchange} WHERE name = $1`,
      [name],
    );
  }

  async addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.tables.binding} (exchange, queue, routing_key, arguments) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
      [exchange, binding.queue, binding.routingKey, stableJson(binding.arguments)],
    );
  }

  async removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.tables.binding} WHERE exchange = $1 AND queue = $2 AND routing_key = $3 AND arguments = $4`, [
      exchange,
      binding.queue,
      binding.routingKey,
      stableJson(binding.arguments),
    ]);
  }

  async listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    const { rows } = await this.pool.query<{ queue: string; routing_key: string; arguments: string }>(
      `SELECT queue, routing_key, arguments FROM ${this.tables.binding} WHERE exchange = $1`,
      [exchange],
    );
    return rows.map((row) => ({ queue: row.queue, routingKey: row.routing_key, arguments: JSON.parse(row.arguments) as Record<string, unknown> }));
  }

  // ——— queues ———

  async declareQueue(queue: Queue): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.tables.queue} (id, name, kq_declaration) VALUES (nextval('queue_id_sequence'), $1, $2)
       ON CONFLICT (name) DO UPDATE SET kq_declaration = EXCLUDED.kq_declaration`,
      [queue.name, JSON.stringify(queue.toOptions())],
    );
  }

  async lookupQueue(name: string): Promise<Queue | undefined> {
    const { rows } = await this.pool.query<{ kq_declaration: string | null }>(`SELECT kq_declaration FROM ${this.tables.queue} WHERE name = $1`, [name]);
    const row = rows[0];
    if (!row) return undefined;
    // A queue Kombu created has no kq declaration: it is a plain durable queue.
    return new Queue(name, row.kq_declaration ? (JSON.parse(row.kq_declaration) as QueueOptions) : {});
  }

  async queueExists(name: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(`SELECT 1 FROM ${this.tables.queue} WHERE name = $1`, [name]);
    return (rowCount ?? 0) > 0;
  }

  async deleteQueue(name: string): Promise<number> {
    const t = this.tables;
    this.#claimer?.forgetQueue(name);
    // One statement: the foreign key (NO ACTION) is checked at its end, when the messages are gone too.
    const { rows } = await this.pool.query<{ ready: string }>(
      `WITH q AS (SELECT id FROM ${t.queue} WHERE name = $1),
            gone AS (DELETE FROM ${t.message} WHERE queue_id IN (SELECT id FROM q) RETURNING visible),
            unbound AS (DELETE FROM ${t.binding} WHERE queue = $1),
            dropped AS (DELETE FROM ${t.queue} WHERE id IN (SELECT id FROM q))
       SELECT count(*) FILTER (WHERE visible) AS ready FROM gone`,
      [name],
    );
    return Number(rows[0]?.ready ?? 0);
  }

  async purgeQueue(name: string): Promise<number> {
    const t = this.tables;
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${t.message} WHERE visible AND queue_id = (SELECT id FROM ${t.queue} WHERE name = $1)`,
      [name],
    );
    return rowCount ?? 0;
  }

  async queueSize(name: string): Promise<number> {
    const t = this.tables;
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${t.message} WHERE visible AND queue_id = (SELECT id FROM ${t.queue} WHERE name = $1)`,
      [name],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Ready rows per priority step, lowest first. */
  async queueSizesByStep(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>> {
    const t = this.tables;
    const { rows } = await this.pool.query<{ step: number; n: string }>(
      `SELECT kq_priority AS step, count(*) AS n FROM ${t.message}
       WHERE visible AND queue_id = (SELECT id FROM ${t.queue} WHERE name = $1) GROUP BY kq_priority ORDER BY kq_priority`,
      [name],
    );
    return rows.map((row) => ({ step: Number(row.step), messageCount: Number(row.n) }));
  }

  // ——— messages ———

  push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    return this.#insert(queue, [message], priority, null);
  }

  pushMany(queue: string, messages: readonly StoredMessage[], priority: number): Promise<void> {
    return this.#insert(queue, messages, priority, null);
  }

  async pushDelayed(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void> {
    await this.#insert(queue, [message], priority, dueAt);
    // Every listening store learns the due time, so it promotes the message on time without polling for it.
    await this.pool.query('SELECT pg_notify($1, $2)', [this.tables.readyChannel, `due:${dueAt}`]);
    this.#leases.noteDue(dueAt);
  }

  /** Inserts rows as Kombu's `_put` does, with kq's priority step; a delayed one is invisible until its due time. */
  #insert(queue: string, messages: readonly StoredMessage[], priority: number, dueAt: number | null): Promise<void> {
    if (!this.#inserts) return Promise.reject(new StaleDeliveryError('The PostgreSQL store is closed.'));
    return this.#inserts.insert(queue, messages, priority, dueAt);
  }

  claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    return (this.#claimer ?? closed()).claim(queues, options);
  }

  async ack(claim: Claim): Promise<void> {
    const { id, token } = claim as PostgresClaim;
    const settled = await (this.#acks ?? closed()).ack(id, token);
    this.#leases.release();
    if (!settled) throw this.#stale('ack', claim as PostgresClaim);
  }

  async restore(claim: Claim, position: 'head' | 'tail', options: RestoreOptions = {}): Promise<void> {
    const { id, token, removed } = claim as PostgresClaim;
    const t = this.tables;
    if (removed) {
      await this.#putBack(claim.queue, id, removed, position, options.redelivered ?? true);
      return;
    }
    // Head: the row keeps the time it was claimed, which sorts before every row never claimed (NULL, last in
    // Kombu's order). Tail: a fresh id and no time, as if published now.
    const tail = position === 'tail' ? `, id = nextval('message_id_sequence'), "timestamp" = NULL` : '';
    const { rowCount } = await this.pool.query(
      `UPDATE ${t.message} SET visible = true, kq_holder = NULL, kq_claim = NULL, kq_lease_until = NULL,
         kq_redelivered = kq_redelivered OR $3${tail}
       WHERE id = $1 AND kq_claim = $2`,
      [id, token, options.redelivered ?? true],
    );
    this.#leases.release();
    if (!rowCount) throw this.#stale('restore', claim as PostgresClaim);
  }

  /**
   * A no-ack claim's row, deleted by the claim and never handed out, goes back: at the head with its own id and
   * `timestamp`, so exactly where it was in Kombu's order; at the tail with a fresh id, as if published now. Nothing
   * goes back to a queue deleted meanwhile.
   */
  async #putBack(queue: string, id: number, removed: RemovedRow, position: 'head' | 'tail', redelivered: boolean): Promise<void> {
    const head = position === 'head';
    // A put-back repeated (a retried call) leaves one row, not a second copy.
    await this.pool.query(
      `INSERT INTO ${this.tables.message} (id, visible, "timestamp", payload, version, queue_id, kq_priority, kq_redelivered)
       SELECT COALESCE($2::int, nextval('message_id_sequence')), true, $3::timestamp, $4, 1, q.id, $5, $6
       FROM ${this.tables.queue} q WHERE q.name = $1
       ON CONFLICT (id) DO NOTHING`,
      [queue, head ? id : null, head ? removed.timestamp : null, removed.payload, removed.priority, removed.redelivered || redelivered],
    );
  }

  #stale(action: string, claim: PostgresClaim): StaleDeliveryError {
    return new StaleDeliveryError(
      `Cannot ${action} message ${claim.message.deliveryTag} from ${claim.queue}: its claim is no longer held ` +
        `(the lease ran out and the message was returned to its queue). It will be delivered again.`,
    );
  }
}

function closed(): never {
  throw new StaleDeliveryError('The PostgreSQL store is closed.');
}
