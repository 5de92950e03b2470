import {
  OperationTimeout,
  isReadyState,
  sanitizeUrl,
  tlsFailureOf,
  type TlsOption,
  type ResultBackend,
  type ResultMeta,
  type StoreResultOptions,
  type WaitForResultOptions,
} from '@kq/core';
import pg from 'pg';
import { NotificationListener } from './notification-listener';
import { connectionStringOf } from './postgres-options';
import { prepared } from './prepared-statement';
import { withTlsParameters } from './postgres-tls';
import { GENERIC_PLANS, withSessionSettings } from './session-settings';

export interface PostgresResultBackendOptions {
  /** The results table (default `kq_result`). */
  table?: string;
  /** Connections in the pool (one more is kept for LISTEN). Default 2. */
  poolSize?: number;
  /** TLS, as the transport's `tls` option (kq's or Kombu's names), written into the URL as libpq's parameters. */
  tls?: TlsOption;
  logger?: { warn(message: string): void };
}

/** How often a backend deletes expired results (each backend, at most). */
const EXPIRY_SWEEP_MS = 60_000;
/**
 * A ready result up to this size (bytes of its JSON) travels in its NOTIFY (PostgreSQL takes up to 8,000 bytes), so a
 * woken waiter has it without a `SELECT` — one round trip fewer on every `get()`. Larger ones send the task id only.
 */
const NOTIFIED_META_BYTES = 4000;

/**
 * Task results in PostgreSQL: one row per task holding the Celery result meta as JSON (the fields and states
 * Python's backends store), an expiry, and a NOTIFY when a task is ready, so `get()` is pushed, never polled. A
 * stored SUCCESS is never overwritten by a later non-success state (Celery's rule).
 */
export class PostgresResultBackend implements ResultBackend {
  readonly name = 'postgres';
  readonly pushes = true;
  readonly table: string;
  readonly #channel: string;
  readonly #pool: pg.Pool;
  readonly #listener: NotificationListener;
  /** Task id → its waiters, each called with the result when the notification carried it. */
  readonly #waiters = new Map<string, Set<(meta: ResultMeta | null) => void>>();
  #ready: Promise<void> | undefined;
  /**
   * The LISTEN connection, opened by the first wait: a worker that only stores results holds none, and the server
   * does not deliver it a notification per result stored (each a transaction in its backend).
   */
  #listening: Promise<void> | undefined;
  #lastExpirySweep = 0;
  /** The server as a URL without password or parameters, for TLS failures. */
  readonly #target: string;

  constructor(url: string, options: PostgresResultBackendOptions = {}) {
    this.table = options.table ?? 'kq_result';
    if (!/^[a-z_][a-z0-9_]{0,50}$/.test(this.table)) throw new TypeError(`Result table name ${JSON.stringify(this.table)} is not a plain lowercase SQL identifier.`);
    this.#channel = `${this.table}_ready`;
    const connectionString = withTlsParameters(connectionStringOf(url), options.tls);
    this.#target = sanitizeUrl(connectionString).split('?')[0] ?? '';
    const logger = options.logger ?? { warn: (message: string) => console.warn(message) };
    this.#pool = new pg.Pool({ connectionString: withSessionSettings(connectionString, GENERIC_PLANS), max: options.poolSize ?? 2 });
    this.#pool.on('error', (error) => logger.warn(`kq postgres results: idle connection lost: ${error.message}`));
    this.#listener = new NotificationListener({
      connectionString,
      channel: this.#channel,
      onNotification: (payload) => this.#notified(payload),
      // Missed notifications: every waiter looks again.
      onLost: () => {
        for (const taskId of [...this.#waiters.keys()]) this.#wake(taskId, null);
      },
      logger,
    });
  }

  async store(meta: ResultMeta, options: StoreResultOptions = {}): Promise<void> {
    await this.#open();
    const expiresMs = options.expiresMs ?? 86_400_000;
    const json = JSON.stringify(meta);
    const ready = isReadyState(meta.status);
    // `task id` or `task id \n result`; a task id with a newline in it (Celery never makes one) is sent alone.
    const carried = ready && !meta.task_id.includes('\n') && Buffer.byteLength(json) <= NOTIFIED_META_BYTES;
    // A result small enough to travel in its notification is sent to waiters in a transaction of its own, which
    // writes nothing and so does not wait for the disk: a notification sent in the row's transaction is delivered
    // only after that commit's WAL flush (it must wait for it: a crash must not lose the result of a task that is
    // then acked), one disk flush more in every round trip. Sent first, so it leaves before the row. `store()` still
    // resolves once the row is durable, so the task is acked after that, as before; if the row is lost in a crash
    // first, the task is not acked and runs again (at least once), and the waiter merely saw its result one run
    // early. Not sent over a stored SUCCESS unless this is one too (Celery's rule, as the upsert's WHERE). The row's
    // commit still notifies, with the task id alone: a waiter whose first look ran after the early notification and
    // before the commit would otherwise miss both, and reads the row when woken.
    const notified = carried
      ? this.#pool.query(
          prepared(
            `SELECT pg_notify($1, $2) WHERE $3 OR NOT EXISTS (SELECT 1 FROM ${this.table} WHERE task_id = $4 AND status = 'SUCCESS')`,
            [this.#channel, `${meta.task_id}\n${json}`, meta.status === 'SUCCESS', meta.task_id],
          ),
        )
      : undefined;
    const stored = this.#pool.query(
      prepared(
        `WITH stored AS (
           INSERT INTO ${this.table} (task_id, status, meta, expires_at)
           VALUES ($1, $2, $3, CASE WHEN $4::float8 > 0 THEN now() + make_interval(secs => $4::float8 / 1000) END)
           ON CONFLICT (task_id) DO UPDATE SET status = EXCLUDED.status, meta = EXCLUDED.meta, expires_at = EXCLUDED.expires_at
           WHERE ${this.table}.status <> 'SUCCESS' OR EXCLUDED.status = 'SUCCESS'
           RETURNING task_id)
         SELECT pg_notify($5, $1) FROM stored WHERE $6`,
        [meta.task_id, meta.status, json, expiresMs, this.#channel, ready],
      ),
    );
    await Promise.all([stored, notified]);
    if (Date.now() - this.#lastExpirySweep > EXPIRY_SWEEP_MS) {
      this.#lastExpirySweep = Date.now();
      void this.#pool.query(`DELETE FROM ${this.table} WHERE expires_at < now()`).catch(() => undefined);
    }
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    await this.#open();
    const { rows } = await this.#pool.query<{ meta: string }>(
      prepared(`SELECT meta FROM ${this.table} WHERE task_id = $1 AND (expires_at IS NULL OR expires_at > now())`, [taskId]),
    );
    const row = rows[0];
    return row ? (JSON.parse(row.meta) as ResultMeta) : null;
  }

  async waitFor(taskId: string, options: WaitForResultOptions = {}): Promise<ResultMeta> {
    await this.#open();
    this.#listening ??= this.#listener.start().catch((error: unknown) => {
      this.#listening = undefined;
      throw error;
    });
    await this.#listening;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    // Registered before the first look, so a result stored between the look and the wait still wakes us.
    let woken = false;
    /** The result a notification carried. */
    let carried: ResultMeta | null = null;
    let wake: (() => void) | undefined;
    const waiter = (meta: ResultMeta | null): void => {
      woken = true;
      if (meta) carried = meta;
      wake?.();
    };
    const waiters = this.#waiters.get(taskId) ?? new Set();
    waiters.add(waiter);
    this.#waiters.set(taskId, waiters);
    try {
      for (;;) {
        woken = false;
        const meta = carried ?? (await this.get(taskId));
        if (meta && isReadyState(meta.status)) return meta;
        if (options.signal?.aborted) throw new OperationTimeout(`Stopped waiting for the result of task ${taskId}.`);
        const left = deadline - Date.now();
        if (left <= 0) throw new OperationTimeout(`The result of task ${taskId} was not ready within ${options.timeoutMs} ms.`);
        if (woken) continue;
        await new Promise<void>((resolve) => {
          const timer = Number.isFinite(left) ? setTimeout(done, left) : undefined;
          function done(): void {
            if (timer) clearTimeout(timer);
            options.signal?.removeEventListener('abort', done);
            wake = undefined;
            resolve();
          }
          wake = done;
          options.signal?.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      waiters.delete(waiter);
      if (waiters.size === 0) this.#waiters.delete(taskId);
    }
  }

  async forget(taskId: string): Promise<void> {
    await this.#open();
    await this.#pool.query(`DELETE FROM ${this.table} WHERE task_id = $1`, [taskId]);
  }

  async close(): Promise<void> {
    await this.#listener.stop();
    await this.#pool.end();
  }

  #open(): Promise<void> {
    this.#ready ??= (async () => {
      // Under an advisory lock: two processes running CREATE TABLE IF NOT EXISTS at once on a fresh database can
      // both try to create it, and one fails on pg_type's unique index.
      const client = await this.#pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.table]);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${this.table} (
             task_id TEXT PRIMARY KEY, status TEXT NOT NULL, meta TEXT NOT NULL, expires_at TIMESTAMPTZ)`,
        );
        await client.query(`CREATE INDEX IF NOT EXISTS ${this.table}_expires ON ${this.table} (expires_at) WHERE expires_at IS NOT NULL`);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    })().catch((error: unknown) => {
      this.#ready = undefined;
      // An untrusted, expired or misnamed certificate: one line naming it, not the driver's error.
      throw tlsFailureOf(error, this.#target) ?? error;
    });
    return this.#ready;
  }

  #notified(payload: string): void {
    const newline = payload.indexOf('\n');
    const taskId = newline < 0 ? payload : payload.slice(0, newline);
    // Parsed only when someone here waits for it: a listening process is sent every result stored.
    if (!this.#waiters.has(taskId)) return;
    this.#wake(taskId, newline < 0 ? null : parseMeta(payload.slice(newline + 1)));
  }

  #wake(taskId: string, meta: ResultMeta | null): void {
    for (const waiter of [...(this.#waiters.get(taskId) ?? [])]) waiter(meta);
  }
}

function parseMeta(json: string): ResultMeta | null {
  try {
    return JSON.parse(json) as ResultMeta;
  } catch {
    return null; // the waiter reads the row instead
  }
}
