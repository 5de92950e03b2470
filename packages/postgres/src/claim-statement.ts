import type { TableNames } from './schema';

/** A row a claim took, with where it stood in the pick order. */
export interface ClaimRow {
  id: number;
  payload: string;
  kq_redelivered: boolean;
  kq_priority: number;
  /** The queue's name. */
  name: string;
  /** Its round: the rn-th message taken from its queue in its priority step. */
  rn: string;
  /** Its queue's position in the claim's queue list (1-based). */
  ord: string;
  /** A no-ack claim only (it deletes the row): the row's Kombu `timestamp` as text, to put it back exactly. */
  taken_at?: string | null;
}

const cache = new Map<string, string>();

/**
 * The claim as one statement (one round trip): per queue, the first `max` ready rows in Kombu's order after kq's
 * priority step, locked with SKIP LOCKED so concurrent claimers never wait for or take each other's rows; of those,
 * the batch picks the lowest priority step across all queues first, then takes queues in turn (round-robin) within
 * a step — what `VirtualStore.claim` promises. Rows looked at but not picked are unlocked when the statement ends.
 * With `noAck` the picked rows are deleted; otherwise they are hidden and leased to `holder` under a fresh token.
 *
 * Parameters: $1 queue names, $2 max, and for leased claims $3 holder, $4 claim token, $5 lease in ms.
 */
export function claimStatement(t: TableNames, noAck: boolean): string {
  const key = `${t.message}\u0000${noAck}`;
  let sql = cache.get(key);
  if (sql) return sql;
  const picked = `
    WITH wanted AS (SELECT name, ord FROM unnest($1::text[]) WITH ORDINALITY AS w(name, ord)),
    candidates AS (
      SELECT c.id, c.kq_priority, wanted.ord, wanted.name,
             row_number() OVER (PARTITION BY wanted.ord, c.kq_priority ORDER BY c."timestamp", c.id) AS rn
      FROM wanted
      JOIN ${t.queue} q ON q.name = wanted.name
      CROSS JOIN LATERAL (
        SELECT m.id, m.kq_priority, m."timestamp" FROM ${t.message} m
        WHERE m.queue_id = q.id AND m.visible
        ORDER BY m.kq_priority, m."timestamp", m.id
        LIMIT $2 FOR UPDATE SKIP LOCKED
      ) c
    ),
    chosen AS (SELECT id, name, kq_priority, rn, ord FROM candidates ORDER BY kq_priority, rn, ord LIMIT $2)`;
  const returning = 'RETURNING m.id, m.payload, m.kq_redelivered, chosen.kq_priority, chosen.name, chosen.rn, chosen.ord';
  sql = noAck
    ? `${picked} DELETE FROM ${t.message} m USING chosen WHERE m.id = chosen.id ${returning}, m."timestamp"::text AS taken_at`
    : `${picked}
       UPDATE ${t.message} m SET visible = false, "timestamp" = LOCALTIMESTAMP, version = m.version + 1,
         kq_holder = $3, kq_claim = $4, kq_lease_until = now() + make_interval(secs => $5::float8 / 1000)
       FROM chosen WHERE m.id = chosen.id ${returning}`;
  cache.set(key, sql);
  return sql;
}
