import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCountdown, decodeEnvelope, MalformedEnvelope, pyString, type StoredMessage } from '@kq/core';
import type { PendingAck } from './ack-batcher';
import { settleArguments, type ClaimerHost, type RedisClaim } from './redis-claim';
import { ACK, RESTORE_INFLIGHT } from './lua-scripts';
import { CommandBatch, type BatchReply } from './command-batch';
import { planFrom, UNMEASURED, watchedLists, type Source, type WatchedList } from './claim-plan';
import { quarantineRecord } from './quarantine';

/**
 * Native-command claims (Kombu's layout, acks late): the envelopes never enter Lua, where Redis hashes every byte of
 * every string a script creates (bench/PROFILE-redis.md). A claim is two round trips:
 *
 * 1. a pipeline: the acks waiting to be sent (the ACK script: tags and scores only), `TIME`, the claim's entry in the
 *    in-flight registry, then `LMOVE <queue list> <in-flight list> RIGHT LEFT` once per message wanted — each move
 *    atomic, so a message is always in its queue or in the in-flight list of a registered claim;
 * 2. one `MULTI`: Kombu's records (`HSET unacked tag [envelope, exchange, routing_key]`, built here from the envelope
 *    the worker parses anyway, and `ZADD unacked_index lease tag`), unreadable envelopes to the quarantine list, the
 *    in-flight lists deleted and the registry entries removed, `EXEC`.
 *
 * A process that dies between the two leaves its messages in in-flight lists that the registry names: any kq process's
 * lease sweep puts them back at the head of their queues once the entry is older than the grace (`sweepInflight`).
 * A claim round's lists are its own (a registry entry per round and source list), so claims running side by side in
 * one process never delete each other's.
 *
 * A connection that drops after Redis ran a round and before its replies arrive is the one case the replies cannot
 * tell: ioredis sends a pipeline nobody answered again once it reconnects, so the list then also holds the first
 * moves, which no reply names (recording it and deleting the list would lose them), and a pipeline answered in part
 * fails with its moves made. The registry entry is written `NX`, so a second run of the same round answers 0; either
 * way the process puts its lists back itself as soon as Redis answers, rather than leaving them to the sweep's grace.
 */

/** A claim moves messages in at most this many round trips (a list ran short, or a more urgent one was empty). */
const MAX_ROUNDS = 4;
/** Attempts at putting back the in-flight lists of a claim that failed (the last ones 2 s apart). */
const GIVE_BACK_ATTEMPTS = 35;
/** Attempts at the recording MULTI before the claim fails (its messages then go back to their queues). */
const RECORD_ATTEMPTS = 5;
/** See lua/prelude.lua: one long member keeps `unacked_index` a skiplist once more than a few claims are held. */
const PIN = '_kq.pin: keeps unacked_index a skiplist, where a listpack would make every insert scan the whole set';
const PIN_ABOVE = 16;

/** An in-flight list a claim round moves into: its name, the queue list it takes from, and its registry member. */
interface InflightList {
  inflight: string;
  source: string;
  member: string;
}

/** A claim round's registry entry was there already: ioredis sent the round again after a reconnect. */
class ClaimReplayed extends Error {
  constructor() {
    super('a claim round ran twice: the connection dropped before its replies, and ioredis sent it again');
  }
}

interface Moved {
  source: Source;
  raw: string;
}

/** The claims a native claim made, and how many unreadable envelopes it moved to the quarantine list. */
export interface NativeClaimReply {
  claims: RedisClaim[];
  quarantined: number;
}

/** A message BRPOP popped, to be recorded. */
export interface PoppedEnvelope {
  queue: string;
  step: number;
  /** The list it was popped from. */
  key: string;
  raw: string;
  /** Handed out already: the record makes no claim of it again, only reports its tag and score. */
  handedOut?: boolean;
  /** The envelope decoded already (to hand it out): not decoded a second time. */
  message?: StoredMessage;
}

/** What recording a popped message gave: its claim (unless handed out), its tag and score, and whether more waits. */
export interface PoppedRecord {
  claims: RedisClaim[];
  /** The tag it was recorded under; undefined when it was quarantined instead. */
  poppedTag: string | undefined;
  score: string;
  /** Some list of the queues had messages when it was recorded: the next claim need not wait. */
  more: boolean;
  quarantined: number;
}

/** The registry member of an in-flight list: the list and the queue list its messages came from. */
export function inflightMember(inflight: string, source: string): string {
  return JSON.stringify([inflight, source]);
}

/**
 * The `unacked_index` score of a lease taken at server time `us` (µs), exactly as lua/prelude.lua's `lease_score`
 * writes it: `<s>.<µs>` of lease deadline - visibility timeout, a lease longer than the timeout counting as that long.
 */
export function leaseScore(leaseUs: number, visibilityUs: number, us: number): string {
  const at = us + Math.min(leaseUs, visibilityUs) - visibilityUs;
  const s = Math.floor(at / 1_000_000);
  return `${s}.${String(at - s * 1_000_000).padStart(6, '0')}`;
}

/** Kombu's unacked record of an envelope: `[envelope, exchange, routing_key]`, the envelope as it was stored. */
export function unackedRecord(raw: string, exchange: string, routingKey: string): string {
  return `[${raw}, ${pyString(exchange)}, ${pyString(routingKey)}]`;
}

export class NativeClaimer {
  readonly #host: ClaimerHost;
  /** Names this process's in-flight lists apart from every other's. */
  readonly #token = randomBytes(9).toString('base64url');
  #seq = 0;
  /** Registry entries of claim rounds that moved nothing, removed with the next claim's records. */
  #idleMembers: string[] = [];
  /** Server time minus this process's clock, µs, from the last `TIME` a claim read (undefined before the first). */
  #clockOffsetUs: number | undefined;
  /** The length each list had after this process's last moves from it (see `planFrom`). */
  readonly #lengths = new Map<string, number>();
  /** False once the server refused LMOVE (Redis before 6.2): the claim script is used instead. */
  supported = true;

  constructor(host: ClaimerHost) {
    this.#host = host;
  }

  /**
   * Up to `max` claims over `queues` (most urgent priority step first, the queues in the order given). With `early`,
   * what was moved is handed there as soon as the moves are answered, while the record is on its way (see `#record`).
   */
  async claim(queues: readonly string[], max: number, early?: (claims: RedisClaim[]) => void): Promise<NativeClaimReply> {
    // The per-message loops live in small functions of their own (below): this async function runs once a batch, and
    // with them inside, TurboFan compiled it whole (its awaits' state machine and every inlined call) in 54–138 ms of
    // a 20,000-task drain's second of CPU (bench/PROFILE-redis.md).
    const host = this.#host;
    const { layout } = host;
    const commands = host.commands();
    const registry = layout.key('inflight');
    const acks = host.takeAcks();
    let acksDone = acks.length === 0;
    /** This call's in-flight lists, one per round and source list. */
    const lists: InflightList[] = [];
    // Taken over, not copied: a copy of an empty array is an array of small integers to V8, and pushing a name into it
    // threw the optimized claim away (one of the drain's costliest recompilations).
    const members: string[] = this.#idleMembers;
    this.#idleMembers = [];
    const moved: Moved[] = [];
    let serverUs = 0;
    // Every list of the queues, most urgent step first: their lengths (read after each round's moves) say where the
    // next round takes from, and how many moves the next claim sends (a move that finds the list empty is wasted).
    const watched = watchedLists(layout, queues);
    let plan = this.#firstPlan(watched, max);
    try {
      for (let round = 0; round < MAX_ROUNDS && plan.length > 0; round++) {
        const pipe = new CommandBatch(commands);
        const first = round === 0;
        if (first && !acksDone) {
          pipe.call('evalsha', ACK.sha, 2, layout.scopedKey('unacked', ''), layout.scopedKey('unackedIndex', ''), ...settleArguments(acks));
        }
        if (first) pipe.call('time');
        const moves = this.#queueMoves(pipe, plan, registry, lists, members);
        for (const list of watched) pipe.call('llen', list.key);
        const replies = await pipe.exec();
        let at = 0;
        if (first && !acksDone) {
          const [error, results] = replies[at++] ?? [];
          await this.#settleAcks(acks, error, results);
          acksDone = true;
        }
        if (first) {
          const [error, time] = replies[at++] ?? [];
          if (error) throw error;
          const [seconds, micros] = time as [string, string];
          serverUs = Number(seconds) * 1_000_000 + Number(micros);
          this.#clockOffsetUs = serverUs - Date.now() * 1000;
        }
        at = takeMoved(replies, at, moves, moved);
        plan = planFrom(watched, this.#readLengths(replies, at, watched), max - moved.length, false);
      }
    } catch (error) {
      if (!acksDone) host.acksFailed(acks, error);
      if (isUnknownCommand(error)) {
        // Redis before 6.2: nothing was moved; the registry entries go, as no sweep there could run their restore.
        this.supported = false;
        await commands.zrem(registry, ...members).catch(() => undefined);
        throw error;
      }
      // What was moved waits in the in-flight lists (a replayed round's lists hold moves no reply named): put back now,
      // or once Redis answers again; their registry entries are the fallback should this process die first.
      const givingBack = this.#giveBack(lists);
      if (!(error instanceof ClaimReplayed)) throw error;
      host.warn(`kq/redis: a claim's moves ran twice (the connection dropped before their replies); put back what they took`);
      await givingBack;
      return { claims: [], quarantined: 0 };
    }
    if (moved.length === 0) {
      this.#idleMembers.push(...members);
      if (this.#idleMembers.length > 1000) await commands.zrem(registry, ...this.#idleMembers.splice(0));
      return { claims: [], quarantined: 0 };
    }
    return this.#record(moved, lists, members, serverUs, early);
  }

  /**
   * The first round asks the most urgent step's lists (a message may have come to any list since), each for at most
   * what it held after this process's last moves plus SLACK.
   */
  #firstPlan(watched: readonly WatchedList[], max: number): Source[] {
    const top: WatchedList[] = [];
    const topLengths: number[] = [];
    const step = watched[0]?.step;
    for (const list of watched) {
      if (list.step !== step) continue;
      top.push(list);
      topLengths.push(this.#lengths.get(list.key) ?? UNMEASURED);
    }
    return planFrom(top, topLengths, max, true);
  }

  /**
   * A round's registry entries and moves, added to `pipe`; what each reply will be: a registry entry (null: 1 when
   * written now, 0 when this round ran before) or a move from a source.
   */
  #queueMoves(pipe: CommandBatch, plan: readonly Source[], registry: string, lists: InflightList[], members: string[]): Array<Source | null> {
    const moves: Array<Source | null> = [];
    const registeredAt = Date.now();
    for (const source of plan) {
      const inflight = `${registry}.${this.#token}.${this.#seq++}`;
      const member = inflightMember(inflight, source.key);
      lists.push({ inflight, source: source.key, member });
      members.push(member);
      pipe.call('zadd', registry, 'NX', registeredAt, member);
      moves.push(null);
      for (let n = 0; n < source.count; n++) {
        pipe.call('lmove', source.key, inflight, 'RIGHT', 'LEFT');
        moves.push(source);
      }
    }
    return moves;
  }

  /** The lists' lengths after a round's moves (its last replies, from `at`), remembered for the next claim. */
  #readLengths(replies: readonly BatchReply[], at: number, watched: readonly WatchedList[]): number[] {
    const lengths: number[] = [];
    for (let index = 0; index < watched.length; index++) {
      const length = Number(replies[at + index]?.[1] ?? 0);
      this.#noteLength((watched[index] as WatchedList).key, length);
      lengths.push(length);
    }
    return lengths;
  }

  /**
   * Returns in-flight lists to the head of their queue lists (and forgets their registry entries), retrying with
   * backoff while Redis is away (about a minute); given up when the store closes or that runs out, leaving them to
   * the sweep, which puts back any list whose registry entry is older than its grace.
   */
  async #giveBack(lists: readonly InflightList[]): Promise<void> {
    const host = this.#host;
    const registry = host.layout.key('inflight');
    let pending = [...lists];
    for (let attempt = 0; pending.length > 0 && !host.isClosed() && attempt < GIVE_BACK_ATTEMPTS; attempt++) {
      try {
        for (const list of pending) {
          await RESTORE_INFLIGHT.run(host.commands(), [registry, list.inflight, list.source], [list.member]);
          pending = pending.filter((other) => other !== list);
        }
      } catch {
        await sleep(backoffCountdown(attempt, { factor: 100, maximum: 2000, jitter: false }));
      }
    }
  }

  /**
   * Records a message BRPOP popped: one pipeline (one write) of the acks waiting, Kombu's two records and the lengths
   * of the queues' lists (Kombu records after its BRPOP the same way; the message lives only here until it lands).
   * Not a MULTI: the two records need no transaction (see below), and a MULTI's EXEC costs Redis its own dispatch.
   * The lease is scored from this process's clock set to the server's by the last `TIME` read (one is read first
   * when none was), as the script would score it from `TIME`.
   */
  async recordPopped(popped: PoppedEnvelope, queues: readonly string[]): Promise<PoppedRecord> {
    const host = this.#host;
    const { layout } = host;
    const commands = host.commands();
    if (this.#clockOffsetUs === undefined) {
      const [seconds, micros] = await commands.time();
      this.#clockOffsetUs = Number(seconds) * 1_000_000 + Number(micros) - Date.now() * 1000;
    }
    const score = leaseScore(host.leaseUs, host.visibilityUs, Date.now() * 1000 + this.#clockOffsetUs);
    let message: StoredMessage | undefined = popped.message;
    let reason = '';
    if (!message) {
      try {
        message = decodeEnvelope(popped.raw, { queue: popped.queue });
      } catch (error) {
        reason = error instanceof MalformedEnvelope ? error.reason : String(error);
      }
    }
    const acks = host.takeAcks();
    const tx = new CommandBatch(commands);
    if (acks.length > 0) tx.call('evalsha', ACK.sha, 2, layout.scopedKey('unacked', ''), layout.scopedKey('unackedIndex', ''), ...settleArguments(acks));
    if (message) {
      const unackedIndex = layout.scopedKey('unackedIndex', '');
      // The record before its index entry: a sweep between the two (a pipeline, not a transaction) finds no entry to
      // act on, never an entry without its record (which Kombu's restore drops). A fresh lease is no sweep's anyway.
      if (1 + host.held() > PIN_ABOVE) tx.call('zadd', unackedIndex, 'NX', 'inf', PIN);
      tx.call('hset', layout.scopedKey('unacked', ''), message.deliveryTag, unackedRecord(popped.raw, message.exchange, message.routingKey));
      tx.call('zadd', unackedIndex, score, message.deliveryTag);
    } else {
      host.warn(`kq/redis: moved an unreadable message from queue ${JSON.stringify(popped.queue)} to ${layout.scopedKey('quarantine', '')}: ${reason}`);
      tx.call('lpush', layout.scopedKey('quarantine', ''), quarantineRecord({ queue: popped.queue, key: popped.key, reason, raw: popped.raw }));
    }
    const watched = layout.steps.flatMap((step) => [...new Set(queues)].map((queue) => layout.listKey(queue, step)));
    for (const key of watched) tx.call('llen', key);
    let replies: BatchReply[];
    try {
      replies = await tx.exec();
    } catch (error) {
      if (acks.length > 0) host.acksFailed(acks, error);
      throw error;
    }
    // A record that failed (not the acks, nor the lengths) fails the claim: the caller retries, then puts it back.
    const failed = replies.slice(acks.length > 0 ? 1 : 0, replies.length - watched.length).find(([error]) => error);
    if (failed) {
      if (acks.length > 0) host.acksFailed(acks, failed[0]);
      throw failed[0];
    }
    if (acks.length > 0) {
      const [error, results] = replies[0] ?? [];
      try {
        await this.#settleAcks(acks, error, results);
      } catch (failure) {
        host.acksFailed(acks, failure);
      }
    }
    const lengths = replies.slice(replies.length - watched.length);
    let more = false;
    watched.forEach((key, index) => {
      const length = Number(lengths[index]?.[1] ?? 0);
      this.#noteLength(key, length);
      if (length > 0) more = true;
    });
    if (!message) return { claims: [], poppedTag: undefined, score, more, quarantined: 1 };
    const claim: RedisClaim = { queue: popped.queue, message, step: popped.step, raw: popped.raw, tag: message.deliveryTag, noAck: false, score };
    if (popped.handedOut) return { claims: [], poppedTag: claim.tag, score, more, quarantined: 0 };
    host.hold(claim);
    return { claims: [claim], poppedTag: claim.tag, score, more, quarantined: 0 };
  }

  #noteLength(key: string, length: number): void {
    if (this.#lengths.size > 1000 && !this.#lengths.has(key)) this.#lengths.clear();
    this.#lengths.set(key, length);
  }

  /** The acks' results from the pipeline; a script the server does not know yet is sent on its own. */
  async #settleAcks(acks: ReadonlyArray<PendingAck<RedisClaim>>, error: unknown, results: unknown): Promise<void> {
    const host = this.#host;
    let answers = results as number[];
    if (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      const keys = [host.layout.scopedKey('unacked', ''), host.layout.scopedKey('unackedIndex', '')];
      answers = (await ACK.run(host.commands(), keys, settleArguments(acks))) as number[];
    }
    acks.forEach((ack, index) => host.settleAck(ack, answers[index] as number));
  }

  /**
   * The MULTI that records what was moved (retried while the connection comes back), then the claims. With `early`,
   * the claims are handed there before the MULTI is answered and the reply names none: the moves already put them in
   * an in-flight list of this process (safe from a crash), their tags and lease score are known, and each one's
   * `recording` makes its settle wait for the record (refused as stale if the record failed, when the in-flight lists
   * go back to their queues and the message is delivered again). The next claim need not wait for the record either:
   * it goes out on the same connection, after it.
   */
  async #record(
    moved: readonly Moved[],
    lists: readonly InflightList[],
    members: readonly string[],
    serverUs: number,
    early?: (claims: RedisClaim[]) => void,
  ): Promise<NativeClaimReply> {
    const host = this.#host;
    const { claims, index, records, bad } = this.#recordsOf(moved, leaseScore(host.leaseUs, host.visibilityUs, serverUs));
    const recorded = this.#sendRecord(claims, index, records, bad, lists, members);
    if (early && claims.length > 0) {
      // One continuation for the batch, not one per claim.
      const landed = recorded.then(
        () => {
          for (const claim of claims) {
            claim.recording = undefined;
            host.hold(claim);
          }
          return true;
        },
        () => {
          for (const claim of claims) claim.recording = undefined; // never held: `holds` says so
          return false;
        },
      );
      for (const claim of claims) claim.recording = landed;
      early(claims);
      recorded.catch((error: unknown) => host.reportError(error));
      return { claims: [], quarantined: bad.length };
    }
    await recorded;
    for (const claim of claims) host.hold(claim);
    return { claims, quarantined: bad.length };
  }

  /**
   * The claims of what was moved, each decoded once, with Kombu's records of them (`unacked_index` scores and
   * `unacked` entries as command arguments) and the quarantine records of envelopes that cannot be read. Its own
   * function, not a loop inside the async `#record`, for the reason `claim` gives.
   */
  #recordsOf(moved: readonly Moved[], score: string): { claims: RedisClaim[]; index: string[]; records: string[]; bad: string[] } {
    const host = this.#host;
    const index: string[] = [];
    const records: string[] = [];
    const bad: string[] = [];
    const claims: RedisClaim[] = [];
    for (const { source, raw } of moved) {
      let message: StoredMessage;
      try {
        message = decodeEnvelope(raw, { queue: source.queue });
      } catch (error) {
        const reason = error instanceof MalformedEnvelope ? error.reason : String(error);
        host.warn(`kq/redis: moved an unreadable message from queue ${JSON.stringify(source.queue)} to ${host.layout.scopedKey('quarantine', '')}: ${reason}`);
        bad.push(quarantineRecord({ queue: source.queue, key: source.key, reason, raw }));
        continue;
      }
      const tag = message.deliveryTag;
      index.push(score, tag);
      records.push(tag, unackedRecord(raw, message.exchange, message.routingKey));
      claims.push({ queue: source.queue, message, step: source.step, raw, tag, noAck: false, score });
    }
    return { claims, index, records, bad };
  }

  async #sendRecord(
    claims: readonly RedisClaim[],
    index: readonly string[],
    records: readonly string[],
    bad: readonly string[],
    lists: readonly InflightList[],
    members: readonly string[],
  ): Promise<void> {
    const host = this.#host;
    const { layout } = host;
    let lastError: unknown;
    for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
      const multi = new CommandBatch(host.commands(), { transaction: true });
      if (claims.length > 0) {
        const unackedIndex = layout.scopedKey('unackedIndex', '');
        if (claims.length + host.held() > PIN_ABOVE) multi.call('zadd', unackedIndex, 'NX', 'inf', PIN);
        multi.call('zadd', unackedIndex, ...index);
        multi.callInPieces('hset', layout.scopedKey('unacked', ''), records, 2);
      }
      if (bad.length > 0) multi.call('lpush', layout.scopedKey('quarantine', ''), ...bad);
      multi.call('del', ...lists.map((list) => list.inflight));
      multi.call('zrem', layout.key('inflight'), ...members);
      try {
        await multi.exec();
        lastError = undefined;
        break;
      } catch (error) {
        lastError = error;
        if (host.isClosed()) break;
        await sleep(backoffCountdown(attempt, { factor: 100, maximum: Infinity, jitter: false }));
      }
    }
    if (lastError !== undefined) {
      // Not recorded (or recorded with the reply lost, when the lists are gone and the leases bring the claims back):
      // the messages go back to their queues once Redis answers.
      void this.#giveBack(lists);
      throw lastError;
    }
  }
}

/**
 * Reads a round's moves from its replies (from `at`) into `moved`, interleaved as the claim script serves queues (the
 * first of each list, then the second of each...); answers where the replies after them start. Throws a move's
 * error, and `ClaimReplayed` when a registry entry was there already.
 */
function takeMoved(replies: readonly BatchReply[], at: number, moves: ReadonlyArray<Source | null>, moved: Moved[]): number {
  const taken = new Map<Source, string[]>();
  for (const source of moves) {
    const [error, raw] = replies[at++] ?? [];
    if (error) throw error;
    if (source === null && Number(raw) !== 1) throw new ClaimReplayed();
    if (source === null || typeof raw !== 'string') continue;
    const list = taken.get(source);
    if (list) list.push(raw);
    else taken.set(source, [raw]);
  }
  const runs = [...taken];
  let longest = 0;
  for (const [, raws] of runs) longest = Math.max(longest, raws.length);
  for (let n = 0; n < longest; n++) {
    for (const [source, raws] of runs) if (n < raws.length) moved.push({ source, raw: raws[n] as string });
  }
  return at;
}

function isUnknownCommand(error: unknown): boolean {
  return error instanceof Error && /unknown command/i.test(error.message);
}
