import { loadLuaScript } from './lua-script';

/*
 * The transport's scripts: the Lua of each is `lua/<name>.lua`, most with `lua/prelude.lua` (shared functions) before it.
 * Every multi-key state change of the transport is one of these scripts, so it is atomic on the server and costs one
 * round trip. Conventions shared by all of them:
 *
 * - Time is the server's (`TIME`), so processes with skewed clocks agree on leases and due times. Kombu writes
 *   `unacked_index` scores from the client clock in seconds; kq writes server seconds with microseconds.
 * - Claims kq holds have two kq-only records besides Kombu's `unacked`/`unacked_index`:
 *     leases  (zset)  tag -> lease deadline (epoch ms)
 *     holders (hash)  tag -> "<token>\n<unacked_index score when last written>\n<queue>"
 *   The token is new for every claim (the delivery tag is not: Kombu's tag is per message and survives restores),
 *   so a settle from an earlier claim of the same message is refused. The score snapshot detects a Python worker
 *   that restored and re-claimed the message meanwhile (it rewrites `unacked_index` but knows nothing of holders).
 */

/**
 * The member that keeps `unacked_index` and `leases` in Redis's skiplist encoding (see `pin` below): longer than
 * `zset-max-listpack-value` (64 bytes by default), scored +inf. Exported for tests.
 */
export const SKIPLIST_PIN = '_kq.pin: keeps this sorted set a skiplist, as a listpack would make every insert scan the set';

/**
 * Takes up to `max` messages: priority steps first, then queues in the given order, rotating a served queue to the
 * back; records each in Kombu's `unacked`/`unacked_index` and in kq's lease records, in the same atomic step (Kombu
 * pops with BRPOP and records in a second round trip, losing the message if it dies in between).
 * An envelope that is not a JSON object with `properties.delivery_tag` is moved to the quarantine list.
 *
 * Acks that were waiting to be sent ride along and are applied first (one script call instead of two).
 *
 * KEYS: unacked, unacked_index, leases, holders, quarantine, request key (for the acks' replies)
 * ARGV: prefix, sep, max, noAck(0|1), tokenBase, leaseMs, nSteps, steps..., nQueues, queues...,
 *       nPre(0|1), [preQueue, preStep, preRaw, preToken]  (a message BRPOP already popped, recorded first; with a
 *       preToken the caller already has it, so it is recorded under that token and its raw is not sent back),
 *       nAcks, (tag, token)..., close
 * A queue's list key is `prefix .. queue .. close [.. sep .. step]`: Kombu's with prefix and close as they are, the
 * cluster layout's `{queue}` with `{` appended to the prefix and close `}`.
 * Returns: { {queue, step, raw, token, tag, ...}, {queue, reason, ...}, {ack result (1|0), ...} }
 */
export const CLAIM = loadLuaScript('claim', 'prelude');

/**
 * Acks (or rejects without requeue): forgets each claim that is still ours.
 * KEYS: unacked, unacked_index, leases, holders, request key. ARGV: (tag, token) pairs.
 * Returns 1 (done) or 0 (stale) per pair.
 */
export const ACK = loadLuaScript('ack', 'prelude');

/**
 * Restore a claim that is still ours: RPUSH (head, consumed next) or LPUSH (tail), with the redelivered envelope.
 * KEYS: unacked, unacked_index, leases, holders, target list, request key. ARGV: tag, token, 'head'|'tail', envelope.
 * Returns 1, or 0 when stale.
 */
export const RESTORE = loadLuaScript('restore', 'prelude');

/**
 * Moves a claimed message kq could not decode to the quarantine list (forgetting the claim if it is ours).
 * KEYS: unacked, unacked_index, leases, holders, quarantine, request key. ARGV: tag, token ('' for noAck), record.
 */
export const QUARANTINE = loadLuaScript('quarantine', 'prelude');

/**
 * Lease heartbeat: extends the lease and refreshes the `unacked_index` score (so Kombu's visibility sweep never
 * sees a delivery kq is still working on as old) of every claim that is still ours.
 * KEYS: unacked, unacked_index, leases, holders. ARGV: leaseMs, then (tag, token) pairs. Returns the lost tokens.
 */
export const RENEW = loadLuaScript('renew', 'prelude');

/**
 * Finds kq leases that ran out. Records that no longer describe a live claim (a Python worker restored the message
 * after the visibility timeout) are dropped here.
 * KEYS: unacked, unacked_index, leases, holders. ARGV: limit. Returns {tag, holder, unacked value, ...}.
 */
export const LEASE_SCAN = loadLuaScript('lease-scan', 'prelude');

/**
 * Restores claims whose lease ran out, each only if nothing changed since LEASE_SCAN read it (compare-and-set on
 * the holder record, the lease still expired and `unacked_index` untouched).
 * KEYS: unacked, unacked_index, leases, holders. ARGV: prefix, then (tag, holder, target key, envelope) groups.
 * Returns how many were restored.
 */
export const LEASE_RESTORE = loadLuaScript('lease-restore', 'prelude');

/**
 * Kombu's visibility sweep, first half: takes `unacked_mutex` (SET NX PX, as Kombu) and lists deliveries older
 * than the visibility timeout that kq does not hold (kq-held ones follow the lease rule instead).
 * KEYS: unacked, unacked_index, holders, unacked_mutex. ARGV: mutex token, mutex expiry ms, visibility s, limit.
 * Returns false when the mutex is held elsewhere, else {tag, score, unacked value or false, ...}.
 */
export const VISIBILITY_SCAN = loadLuaScript('visibility-scan', 'prelude');

/**
 * Kombu's visibility sweep, second half: restores each listed delivery if its `unacked_index` score is unchanged
 * and kq does not hold it, then releases the mutex (compare-and-delete, as Kombu's release script).
 * KEYS: unacked, unacked_index, holders, unacked_mutex.
 * ARGV: prefix, mutex token, then (tag, score, envelope, nTargets, (op, key)...) groups; op is RPUSH or LPUSH.
 */
export const VISIBILITY_RESTORE = loadLuaScript('visibility-restore', 'prelude');

/** Releases `unacked_mutex` if it is still ours (Kombu's script, verbatim). KEYS: mutex. ARGV: token. */
export const MUTEX_RELEASE = loadLuaScript('mutex-release');

/**
 * Holds a message in the delayed set until due (server time + delay) and, when it is now the earliest, tells every
 * kq process's promoter so it re-arms its timer. Member: "<byte length of key>:<key><envelope>".
 * KEYS: delayed. ARGV: delay ms, member, nudge channel. Returns the due time (epoch ms).
 */
export const PUSH_DELAYED = loadLuaScript('push-delayed', 'prelude');

/**
 * Moves due delayed messages to the tail of their queue lists (LPUSH, as a publish).
 * KEYS: delayed. ARGV: prefix, limit. Returns {moved, ms until the next one is due or -1}.
 */
export const PROMOTE_DELAYED = loadLuaScript('promote-delayed', 'prelude');

/**
 * Deletes or purges a queue: sums LLEN of its lists and deletes them, atomically (Kombu does the same in a MULTI).
 * KEYS: the queue's lists. Returns the number of messages they held.
 */
export const DRAIN_LISTS = loadLuaScript('drain-lists');
