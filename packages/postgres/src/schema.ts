import type { PoolClient } from 'pg';

/**
 * The tables kq shares with Kombu's SQLAlchemy transport, and what kq adds to them. Kombu's own tables are created
 * exactly as SQLAlchemy's `create_all` makes them on PostgreSQL (same sequence, constraint and index names), so a
 * Python worker that starts second finds them and one that started first is not disturbed. kq's additions are new
 * columns, indexes, tables and a trigger that Kombu never reads.
 */
export interface TableNames {
  /** Kombu `queue_tablename` (default `kombu_queue`). */
  readonly queue: string;
  /** Kombu `message_tablename` (default `kombu_message`). */
  readonly message: string;
  /** kq's exchange declarations. */
  readonly exchange: string;
  /** kq's bindings (Kombu keeps them in each process's memory, so kq keeps its own for cross-process routing). */
  readonly binding: string;
  /** The schema version table. */
  readonly version: string;
  /** NOTIFY channel woken when a message becomes ready. */
  readonly readyChannel: string;
}

export function tableNames(queueTable = 'kombu_queue', messageTable = 'kombu_message'): TableNames {
  for (const name of [queueTable, messageTable]) {
    if (!/^[a-z_][a-z0-9_]{0,40}$/.test(name)) {
      throw new TypeError(`Table name ${JSON.stringify(name)} is not a plain lowercase SQL identifier of at most 41 characters.`);
    }
  }
  return {
    queue: queueTable,
    message: messageTable,
    exchange: `${messageTable}_kq_exchange`,
    binding: `${messageTable}_kq_binding`,
    version: `${messageTable}_kq_schema`,
    readyChannel: `${messageTable}_kq_ready`,
  };
}

/**
 * Each migration runs once per database, in order, inside one transaction under an advisory lock, so processes
 * starting together never race. Append new ones; never edit a released one.
 */
function migrations(t: TableNames): string[][] {
  return [
    [
      // Kombu's tables, as SQLAlchemy creates them (models.py): sequences for ids, no server defaults that Python
      // would not set; kq inserts ids with nextval() itself.
      `CREATE SEQUENCE IF NOT EXISTS queue_id_sequence`,
      `CREATE TABLE IF NOT EXISTS ${t.queue} (id INTEGER NOT NULL, name VARCHAR(200), PRIMARY KEY (id), UNIQUE (name))`,
      `CREATE SEQUENCE IF NOT EXISTS message_id_sequence`,
      `CREATE TABLE IF NOT EXISTS ${t.message} (
         id INTEGER NOT NULL, visible BOOLEAN, "timestamp" TIMESTAMP WITHOUT TIME ZONE, payload TEXT NOT NULL,
         version SMALLINT NOT NULL, queue_id INTEGER, PRIMARY KEY (id),
         CONSTRAINT "FK_${t.message}_queue" FOREIGN KEY (queue_id) REFERENCES ${t.queue} (id))`,
      `CREATE INDEX IF NOT EXISTS ix_${t.message}_timestamp_id ON ${t.message} ("timestamp", id)`,
      `CREATE INDEX IF NOT EXISTS ix_${t.message}_visible ON ${t.message} (visible)`,
      `CREATE INDEX IF NOT EXISTS ix_${t.message}_timestamp ON ${t.message} ("timestamp")`,
      // kq's additions.
      `ALTER TABLE ${t.queue} ADD COLUMN IF NOT EXISTS kq_declaration TEXT`,
      `ALTER TABLE ${t.message}
         ADD COLUMN IF NOT EXISTS kq_priority SMALLINT NOT NULL DEFAULT 0,
         ADD COLUMN IF NOT EXISTS kq_redelivered BOOLEAN NOT NULL DEFAULT false,
         ADD COLUMN IF NOT EXISTS kq_holder TEXT,
         ADD COLUMN IF NOT EXISTS kq_claim TEXT,
         ADD COLUMN IF NOT EXISTS kq_lease_until TIMESTAMPTZ,
         ADD COLUMN IF NOT EXISTS kq_due_at TIMESTAMPTZ`,
      // Ready messages in claim order: Kombu's order (timestamp, id; NULLs last, so restored rows come first) after
      // kq's priority step.
      `CREATE INDEX IF NOT EXISTS ${t.message}_kq_ready ON ${t.message} (queue_id, kq_priority, "timestamp", id) WHERE visible`,
      `CREATE INDEX IF NOT EXISTS ${t.message}_kq_lease ON ${t.message} (kq_lease_until) WHERE kq_lease_until IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS ${t.message}_kq_holder ON ${t.message} (kq_holder) WHERE kq_holder IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS ${t.message}_kq_due ON ${t.message} (kq_due_at) WHERE kq_due_at IS NOT NULL`,
      `CREATE TABLE IF NOT EXISTS ${t.exchange} (name TEXT PRIMARY KEY, declaration TEXT NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${t.binding} (
         exchange TEXT NOT NULL, queue TEXT NOT NULL, routing_key TEXT NOT NULL, arguments TEXT NOT NULL,
         PRIMARY KEY (exchange, queue, routing_key, arguments))`,
      `CREATE INDEX IF NOT EXISTS ${t.binding}_queue ON ${t.binding} (queue)`,
      // Every message that becomes ready wakes listening consumers — Python's inserts too, so kq consumers never
      // poll for them. PostgreSQL folds identical notifications within a transaction.
      `CREATE OR REPLACE FUNCTION ${t.message}_kq_notify() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_notify('${t.readyChannel}', NEW.queue_id::text); RETURN NULL; END $$`,
      `DROP TRIGGER IF EXISTS ${t.message}_kq_ready ON ${t.message}`,
      `CREATE TRIGGER ${t.message}_kq_ready AFTER INSERT OR UPDATE OF visible ON ${t.message}
         FOR EACH ROW WHEN (NEW.visible) EXECUTE FUNCTION ${t.message}_kq_notify()`,
    ],
    [
      // Fewer indexes: a claim cannot be a HOT update (it flips `visible`, which kq's ready index is partial on), so
      // it adds an entry to every index whose predicate the claimed row meets — six before, three now (the key,
      // Kombu's `timestamp, id` and the lease). Kombu's single-column `visible` and `timestamp` indexes serve
      // neither side's queries: Python's `_get` filters on the queue and orders by `timestamp, id`, which
      // `ix_…_timestamp_id` serves; kq's claims use its ready index. Renewals find a holder's rows through the lease
      // index, which holds every claimed row.
      `DROP INDEX IF EXISTS ix_${t.message}_visible`,
      `DROP INDEX IF EXISTS ix_${t.message}_timestamp`,
      `DROP INDEX IF EXISTS ${t.message}_kq_holder`,
      // One NOTIFY per queue per insert statement, not a trigger call per row (a thousand rows published at once
      // ran the row trigger a thousand times). Updates that make rows ready (restores, sweeps, promotions, Python
      // never does) keep the row trigger.
      `CREATE OR REPLACE FUNCTION ${t.message}_kq_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_notify('${t.readyChannel}', queue_id::text) FROM (SELECT DISTINCT queue_id FROM inserted WHERE visible) q;
       RETURN NULL; END $$`,
      `DROP TRIGGER IF EXISTS ${t.message}_kq_ready ON ${t.message}`,
      `CREATE TRIGGER ${t.message}_kq_ready AFTER UPDATE OF visible ON ${t.message}
         FOR EACH ROW WHEN (NEW.visible) EXECUTE FUNCTION ${t.message}_kq_notify()`,
      `CREATE TRIGGER ${t.message}_kq_inserted AFTER INSERT ON ${t.message} REFERENCING NEW TABLE AS inserted
         FOR EACH STATEMENT EXECUTE FUNCTION ${t.message}_kq_notify_inserted()`,
    ],
  ];
}

/** The newest schema version this kq knows. */
export function schemaVersion(t: TableNames): number {
  return migrations(t).length;
}

/** Brings the database's schema up to date: creates what is missing and runs the migrations not yet run. */
export async function migrate(client: PoolClient, t: TableNames): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [t.version]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${t.version} (version INTEGER NOT NULL)`);
    const { rows } = await client.query<{ version: number }>(`SELECT max(version) AS version FROM ${t.version}`);
    const current = rows[0]?.version ?? 0;
    const all = migrations(t);
    for (let index = current; index < all.length; index++) {
      for (const statement of all[index] as string[]) await client.query(statement);
      await client.query(`INSERT INTO ${t.version} (version) VALUES ($1)`, [index + 1]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
