import { randomUUID } from 'node:crypto';
import { MalformedEnvelope, StaleDeliveryError, decodeEnvelope, type Claim, type ClaimOptions, type StoredMessage } from '@kq/core';
import type pg from 'pg';
import { claimStatement, type ClaimRow } from './claim-statement';
import type { LeaseKeeper } from './lease-keeper';
import { prepared } from './prepared-statement';
import type { ReadyListener } from './ready-listener';
import type { TableNames } from './schema';

/** A claim on a row: its id, and the claim token that fences a settle after the lease was taken back. */
export interface PostgresClaim extends Claim {
  readonly id: number;
  readonly token: string;
  /**
   * A no-ack claim deleted its row; this is what it held, so a claim never handed out (its consumer was cancelled
   * mid-batch) can be put back as it was.
   */
  readonly removed?: RemovedRow;
}

/** A row a no-ack claim deleted, as it was. */
export interface RemovedRow {
  readonly payload: string;
  readonly priority: number;
  readonly redelivered: boolean;
  /** Kombu's `timestamp` as PostgreSQL wrote it (null: never claimed). */
  readonly timestamp: string | null;
}

/** Rows marked by a claim whose envelope could not be read: left in place, invisible, for a person to inspect. */
export const QUARANTINE_HOLDER = 'quarantined';

export interface ClaimerOptions {
  tables: TableNames;
  holder: string;
  leaseMs: number;
  logger: { warn(message: string): void };
}

export interface ClaimerConnections {
  /** The claim connections (undefined once closed). */
  claims(): pg.Pool | undefined;
  /** The statement connections, for quarantining a row. */
  statements(): pg.Pool;
  listener: ReadyListener;
  leases: LeaseKeeper;
  /** Rows a no-ack claim deleted. */
  deleted(rows: number): void;
}

/**
 * Takes messages for consumers: one statement claims a batch (see {@link claimStatement}); a claim that finds nothing
 * waits on the ready listener for its own queues' notifications, and a claim that came back short does the same
 * before its next look — the queues held no more ready rows then, so looking again before a notification costs a
 * statement that finds nothing (one per round trip when tasks come one at a time).
 */
export class PostgresClaimer {
  readonly #options: ClaimerOptions;
  readonly #with: ClaimerConnections;
  /**
   * The LISTEN connection, opened by the first claim that would wait: a process that only publishes holds none, and
   * the server does not deliver it a notification per message it publishes (each one a transaction in the listening
   * backend).
   */
  #listening: Promise<void> | undefined;
  /** Queue name → id, for waking claims on their own queues' notifications only. */
  readonly #queueIds = new Map<string, string>();
  /** Queue lists whose last claim came back short → the wake-up generation read before it. */
  readonly #short = new Map<string, number>();

  constructor(options: ClaimerOptions, connections: ClaimerConnections) {
    this.#options = options;
    this.#with = connections;
  }

  /** A deleted queue's id is not reused for it. */
  forgetQueue(name: string): void {
    this.#queueIds.delete(name);
  }

  async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    if (queues.length === 0 || options.signal?.aborted) return [];
    const { listener, leases } = this.#with;
    // Nothing to wait for before the statement, a claim that does not wait (a consumer's look-ahead) is on the wire
    // when this call returns: the server works on it while the consumer hands out the batch before.
    const promoting = leases.promoteIfDue();
    if (promoting) await promoting;
    const waits = options.blockMs > 0;
    const listening = waits ? await this.#listen() : false;
    const ids = listening ? await this.#idsOf(queues) : null;
    const key = queues.join('\u0000');
    const shortAt = this.#short.get(key);
    this.#short.delete(key);
    let generation = listener.generation(ids);
    // Nothing became ready in these queues since a claim found them short: wait for a notification first.
    const skipLook = listening && shortAt === generation && leases.dueIn() > 0;
    if (!skipLook) {
      const first = await this.#claimOnce(queues, options, key, generation);
      // Without a LISTEN connection the wait below runs to its timeout: a poll.
      if (first.length > 0 || !waits) return first;
    }
    await listener.waitForReady(Math.min(options.blockMs, leases.dueIn()), options.signal, generation, ids);
    if (options.signal?.aborted) return [];
    await leases.promoteIfDue();
    generation = listener.generation(ids);
    return this.#claimOnce(queues, options, key, generation);
  }

  /** Whether the LISTEN connection is up (opening it on first use); false while it cannot be opened. */
  async #listen(): Promise<boolean> {
    this.#listening ??= this.#with.listener.start().catch((error: unknown) => {
      // Claims wait out their poll interval meanwhile; the next one tries again.
      this.#listening = undefined;
      this.#options.logger.warn(`kq postgres: could not LISTEN for new messages (${describe(error)}); polling until it can`);
      throw error;
    });
    return this.#listening.then(
      () => true,
      () => false,
    );
  }

  /**
   * The ids of these queues (what the ready trigger NOTIFYs), so a waiting claim wakes for them only; null while one
   * does not exist yet (then any wake-up will do). A queue keeps its id until it is deleted.
   */
  async #idsOf(queues: readonly string[]): Promise<string[] | null> {
    const missing = queues.filter((name) => !this.#queueIds.has(name));
    if (missing.length > 0) {
      const { rows } = await this.#claims().query<{ id: string; name: string }>(
        `SELECT id::text AS id, name FROM ${this.#options.tables.queue} WHERE name = ANY($1::text[])`,
        [missing],
      );
      for (const row of rows) this.#queueIds.set(row.name, row.id);
    }
    const ids = queues.map((name) => this.#queueIds.get(name));
    return ids.every((id): id is string => id !== undefined) ? ids : null;
  }

  async #claimOnce(queues: readonly string[], options: ClaimOptions, key: string, generation: number): Promise<Claim[]> {
    const token = randomUUID();
    const max = Math.max(1, options.max);
    const statement = claimStatement(this.#options.tables, options.noAck);
    const params = options.noAck ? [queues, max] : [queues, max, this.#options.holder, token, this.#options.leaseMs];
    const { rows } = await this.#claims().query<ClaimRow>(prepared(statement, params));
    if (rows.length < max) this.#short.set(key, generation);
    // UPDATE … RETURNING has no order: put them back in the order they were picked.
    rows.sort((a, b) => a.kq_priority - b.kq_priority || Number(a.rn) - Number(b.rn) || Number(a.ord) - Number(b.ord));
    const claims: PostgresClaim[] = [];
    for (const row of rows) {
      let message: StoredMessage;
      try {
        message = decodeEnvelope(row.payload, { queue: row.name });
      } catch (error) {
        if (!(error instanceof MalformedEnvelope)) throw error;
        await this.#quarantine(row, error);
        continue;
      }
      if (row.kq_redelivered) message.redelivered = true;
      const claim: PostgresClaim = { queue: row.name, message, id: row.id, token };
      if (!options.noAck) claims.push(claim);
      else claims.push({ ...claim, removed: { payload: row.payload, priority: row.kq_priority, redelivered: row.kq_redelivered, timestamp: row.taken_at ?? null } });
    }
    if (options.noAck) this.#with.deleted(rows.length);
    else this.#with.leases.hold(claims.length);
    return claims;
  }

  #claims(): pg.Pool {
    const pool = this.#with.claims();
    if (!pool) throw new StaleDeliveryError('The PostgreSQL store is closed.');
    return pool;
  }

  async #quarantine(row: ClaimRow, error: MalformedEnvelope): Promise<void> {
    const { tables, logger } = this.#options;
    logger.warn(
      `kq postgres: message ${row.id} in queue ${row.name} is not a Kombu envelope (${error.reason}); ` +
        `it stays in ${tables.message} with kq_holder = '${QUARANTINE_HOLDER}' for inspection`,
    );
    await this.#with
      .statements()
      .query(`UPDATE ${tables.message} SET visible = false, kq_holder = $2, kq_claim = NULL, kq_lease_until = NULL WHERE id = $1`, [
        row.id,
        QUARANTINE_HOLDER,
      ]);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
