import { loadLuaScript } from './lua-script';

/*
 * The transport's scripts: the Lua of each is `lua/<name>.lua`, most with `lua/prelude.lua` (shared functions) before it.
 * Every multi-key state change of the transport is one of these scripts, so it is atomic on the server and costs one
 * round trip. Conventions shared by all of them:
 *
 * - Time is the server's (`TIME`), so processes with skewed clocks agree on leases and due times. Kombu writes
 *   `unacked_index` scores from the client clock in seconds; kq writes server seconds with microseconds.
 * - A claim kq holds is only Kombu's `unacked[tag]` and `unacked_index[tag]`; the score is the lease and the fence
 *   (prelude.lua says how). A settle carries the score its holder last wrote and acts only while it is still there;
 *   a settle of a tag that is gone changes nothing, so a settle ioredis re-sends after a reconnect is harmless and
 *   no reply is kept for it.
 */

/**
 * Takes up to `max` messages: priority steps first, then queues in the given order, rotating a served queue to the
 * back (for one queue, a run of its most urgent non-empty list in one `LMPOP`, Redis 7.0+); records each in Kombu's
 * `unacked`/`unacked_index` under one lease score for the batch, in the same atomic step (Kombu pops with BRPOP and
 * records in a second round trip, losing the message if it dies in between). An envelope that is not a JSON object with
 * `properties.delivery_tag` is moved to the quarantine list.
 *
 * Acks that were waiting to be sent ride along and are applied first (one script call instead of two).
 *
 * Used where native claims (native-claim.ts) are not: noAck claims, the cluster layout, servers without LMOVE.
 *
 * KEYS: unacked, unacked_index, quarantine
 * ARGV: prefix, sep, max, noAck(0|1), lease µs, visibility timeout µs, nSteps, steps..., nQueues, queues...,
 *       nPre(0|1), [preQueue, preStep, preRaw, handedOut(0|1)]  (a message BRPOP already popped, recorded first;
 *       handed out already, its raw is not sent back), nAcks, (tag, score)..., close
 * A queue's list key is `prefix .. queue .. close [.. sep .. step]`: Kombu's with prefix and close as they are, the
 * cluster layout's `{queue}` with `{` appended to the prefix and close `}`.
 * Returns: { {queue, step, raw, tag, ...}, {queue, reason, ...}, {ack result (1|0|-1), ...}, score ('' for noAck) }
 */
export const CLAIM = loadLuaScript('claim', 'prelude');

/**
 * Acks (or rejects without requeue): forgets each claim that is still ours.
 * KEYS: unacked, unacked_index. ARGV: (tag, score) pairs.
 * Returns per pair 1 (done), 0 (gone already: nothing to do) or -1 (another claim holds it: stale).
 */
export const ACK = loadLuaScript('ack', 'prelude');

/**
 * Restore a claim that is still ours: RPUSH (head, consumed next) or LPUSH (tail), with the redelivered envelope.
 * KEYS: unacked, unacked_index, target list. ARGV: tag, score, 'head'|'tail', envelope.
 * Returns 1, 0 when the tag is gone (nothing pushed), or -1 when another claim holds it.
 */
export const RESTORE = loadLuaScript('restore', 'prelude');

/**
 * Moves a claimed message kq could not decode to the quarantine list (forgetting the claim if it is ours).
 * KEYS: unacked, unacked_index, quarantine. ARGV: tag, score ('' for noAck), record. Returns as RESTORE.
 */
export const QUARANTINE = loadLuaScript('quarantine', 'prelude');

/**
 * Lease heartbeat: re-scores every claim that is still ours (its score is the one given) with one new lease, in one
 * ZADD XX, so Kombu's visibility rule and kq's sweep keep leaving it alone.
 * KEYS: unacked, unacked_index. ARGV: lease µs, visibility timeout µs, then (tag, score) pairs.
 * Returns { new score, {1-based positions of the pairs no longer ours} }.
 */
export const RENEW = loadLuaScript('renew', 'prelude');

/**
 * The sweep, first half (one rule for every delivery: Kombu's, see prelude.lua): lists deliveries whose score is older
 * than now - visibility timeout; with the mutex flag, nothing while another process holds Kombu's `unacked_mutex`.
 * KEYS: unacked, unacked_index, unacked_mutex. ARGV: mutex flag (1|0), visibility µs, limit.
 * Returns false when standing aside, else {ms until the first delivery not yet stale is (-1: none), tag, score,
 * unacked value or false, ...}.
 */
export const VISIBILITY_SCAN = loadLuaScript('visibility-scan', 'prelude');

/**
 * The sweep, second half: restores each listed delivery if its `unacked_index` score is unchanged (a renewal or a
 * settle since the scan leaves it alone). With the mutex flag it stands aside while another process holds Kombu's
 * `unacked_mutex`; it never takes it, as the whole restore is one atomic step. KEYS: unacked, unacked_index, unacked_mutex.
 * ARGV: prefix, mutex flag (1|0), then (tag, score, envelope, nTargets, (op, key)...) groups; op is RPUSH or LPUSH.
 */
export const VISIBILITY_RESTORE = loadLuaScript('visibility-restore', 'prelude');

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

/**
 * Returns an abandoned native claim's in-flight list to its queue list (head first, in the order taken) and removes
 * its registry entry. KEYS: registry, in-flight list, queue list. ARGV: registry member. Returns how many moved.
 */
export const RESTORE_INFLIGHT = loadLuaScript('restore-inflight');
