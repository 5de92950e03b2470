import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCountdown, ConnectionLost, MalformedEnvelope, decodeEnvelope, type Claim, type ClaimOptions, type StoredMessage } from '@kq/core';
import type { BlockingWaiter } from './blocking-pool';
import { CLAIM, QUARANTINE } from './lua-scripts';
import { NativeClaimer, type PoppedEnvelope } from './native-claim';
import { settleArguments, type ClaimerHost, type RedisClaim } from './redis-claim';

export type { ClaimerHost, RedisClaim } from './redis-claim';
import { quarantineRecord } from './quarantine';

/** What a claim script call took: the claims it sends back, and the tag a handed-out popped message got. */
interface ClaimReply {
  claims: RedisClaim[];
  /** The delivery tag the handed-out popped message was recorded under; undefined when it was not (quarantined). */
  poppedTag: string | undefined;
  /** The lease score of every claim of the call ('' for noAck). */
  score: string;
  /** Known when a native record of a popped message read the queues' lengths: whether messages are waiting. */
  more?: boolean;
}

/** Attempts to record a message BRPOP already popped before giving up and pushing it back. */
const RECORD_ATTEMPTS = 5;

/**
 * Takes messages for the Redis store: one script call claims up to the prefetch window (a run of one list in one
 * `LMPOP`) and records every claim in Kombu's `unacked`/`unacked_index` under one lease score; an idle consumer
 * waits with BRPOP and records what it popped (handing it out first when it may). In the cluster layout each queue
 * is claimed by a call of its own.
 */
export class RedisClaimer {
  readonly #host: ClaimerHost;
  readonly #native: NativeClaimer;
  /** Queue sets whose last claim found them empty: the next claim starts with BRPOP instead of a script call. */
  readonly #idleSets = new Map<string, boolean>();
  #quarantined = 0;
  #waiting = 0;

  constructor(host: ClaimerHost) {
    this.#host = host;
    this.#native = new NativeClaimer(host);
  }

  /** Messages this process moved to the quarantine list. */
  get quarantined(): number {
    return this.#quarantined;
  }

  /** Consumers waiting in BRPOP now: the record of what wakes one can carry acks made meanwhile. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Forgets which queue sets were idle (a new connection). */
  reset(): void {
    this.#idleSets.clear();
  }

  async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    if (queues.length === 0) return [];
    const max = Math.max(1, Math.trunc(options.max));
    const setKey = queues.length === 1 ? (queues[0] as string) : [...queues].sort().join('\n');
    const blocking = options.blockMs > 0;
    if (this.#host.clusterQueues()) return this.#claimCluster(queues, max, options, setKey);
    if (!blocking || !this.#idleSets.get(setKey)) {
      const { claims, handedOut } = await this.#claimBusy(queues, max, options.noAck, options.onEarlyClaims);
      if (claims.length > 0 || handedOut > 0 || !blocking) {
        this.#noteIdle(setKey, claims.length + handedOut < max);
        return claims;
      }
    }
    const pool = this.#host.pool();
    if (!pool) throw new ConnectionLost('The Redis store was closed while a consumer was waiting for messages.');
    const { layout } = this.#host;
    const { keys, origin } = layout.consumeKeys(queues);
    this.#waiting++;
    let popped: [string, string] | null;
    try {
      popped = await pool.brpop(keys, options.blockMs, options.signal);
    } finally {
      this.#waiting--;
    }
    if (!popped) {
      this.#noteIdle(setKey, true);
      return [];
    }
    const [key, raw] = popped;
    const from = origin.get(key) ?? layout.parseListKey(key);
    const message: PoppedEnvelope = { queue: from.queue, step: from.step, key, raw };
    if (options.onEarlyClaims && !options.noAck) {
      const { claims: rest, more } = await this.#takePoppedEarly(queues, max, message, options.onEarlyClaims);
      this.#noteIdle(setKey, more === undefined ? rest.length + 1 < max : !more);
      return rest;
    }
    const { claims, more } = await this.#recordPopped(queues, max, options.noAck, message);
    this.#noteIdle(setKey, more === undefined ? claims.length < max : !more);
    return claims;
  }

  /**
   * A claim that does not wait: native commands (see native-claim.ts) in Kombu's layout when acks are late and the
   * server has LMOVE (Redis 6.2+), else the claim script (noAck claims record nothing, so a script pop is as cheap).
   */
  async #claimBusy(
    queues: readonly string[],
    max: number,
    noAck: boolean,
    onEarlyClaims: ((claims: Claim[]) => void) | undefined,
  ): Promise<{ claims: RedisClaim[]; handedOut: number }> {
    if (noAck || !this.#native.supported) return { claims: (await this.#claimScript(queues, max, noAck, undefined)).claims, handedOut: 0 };
    let handedOut = 0;
    const early = onEarlyClaims
      ? (claims: RedisClaim[]): void => {
          handedOut += claims.length;
          onEarlyClaims(claims);
        }
      : undefined;
    try {
      const { claims, quarantined } = await this.#native.claim(queues, max, early);
      this.#quarantined += quarantined;
      return { claims, handedOut };
    } catch (error) {
      if (this.#native.supported) throw error;
      return { claims: (await this.#claimScript(queues, max, noAck, undefined)).claims, handedOut: 0 };
    }
  }

  /**
   * The cluster layout's claim: a script reaches one slot, so each queue is claimed by a call of its own (side by side:
   * the queues may live on different shards), and an idle consumer waits on every queue at once, one BRPOP each.
   */
  async #claimCluster(queues: readonly string[], max: number, options: ClaimOptions, setKey: string): Promise<Claim[]> {
    await this.#host.clusterQueues()?.note(queues);
    const blocking = options.blockMs > 0;
    if (!blocking || !this.#idleSets.get(setKey)) {
      const claims = await this.#claimEach(queues, max, options.noAck);
      if (claims.length > 0 || !blocking) {
        this.#noteIdle(setKey, claims.length < max);
        return claims;
      }
    }
    const pool = this.#host.pool();
    if (!pool) throw new ConnectionLost('The Redis store was closed while a consumer was waiting for messages.');
    const popped = await this.#waitAny(pool, queues, options.blockMs, options.signal);
    const [message, ...extra] = popped;
    // What the other waits popped while the first woke them goes back to the head of its list as it was: never handed
    // out nor recorded, and taking it too could exceed `max` (the prefetch).
    await Promise.all(extra.map((late) => this.#putBack(late)));
    if (!message) {
      this.#noteIdle(setKey, true);
      return [];
    }
    if (options.onEarlyClaims && !options.noAck) {
      const { claims: rest } = await this.#takePoppedEarly([message.queue], max, message, options.onEarlyClaims);
      this.#noteIdle(setKey, rest.length + 1 < max);
      return rest;
    }
    const { claims } = await this.#recordPopped([message.queue], max, options.noAck, message);
    this.#noteIdle(setKey, claims.length < max);
    return claims;
  }

  /**
   * Up to `max` claims over `queues`, one script call per queue, `max` shared out in the given order (the consumer's
   * rotation), again over the queues that gave their full share while room is left. Handed out interleaved — the
   * first of each queue, then the second of each... — as the one-script claim of Kombu's layout serves them.
   */
  async #claimEach(queues: readonly string[], max: number, noAck: boolean): Promise<RedisClaim[]> {
    const taken = new Map<string, RedisClaim[]>(queues.map((queue) => [queue, []]));
    let open = [...new Set(queues)];
    let room = max;
    let failure: unknown;
    while (room > 0 && open.length > 0) {
      const shares = open.map((_, index) => Math.floor(room / open.length) + (index < room % open.length ? 1 : 0));
      const asked = open.filter((_, index) => (shares[index] as number) > 0);
      const settled = await Promise.allSettled(asked.map((queue, index) => this.#claimScript([queue], shares[index] as number, noAck, undefined)));
      const full: string[] = [];
      settled.forEach((result, index) => {
        const queue = asked[index] as string;
        if (result.status === 'rejected') {
          failure ??= result.reason;
          return;
        }
        taken.get(queue)?.push(...result.value.claims);
        room -= result.value.claims.length;
        if (result.value.claims.length === shares[index]) full.push(queue);
      });
      open = full;
    }
    const claims = interleave([...taken.values()]);
    // Claims already made are handed out (their records exist; dropped here they would wait for their leases to run
    // out); the failure of another queue's call is reported only when nothing came of the whole claim.
    if (claims.length === 0 && failure !== undefined) throw failure;
    if (failure !== undefined) this.#host.reportError(failure);
    return claims;
  }

  /**
   * Waits on each queue's lists with a BRPOP of its own (a blocking command may name keys of one slot only); the
   * first message ends the others' waits. Resolves to what was popped — usually one message, more when waits ended
   * with a message of their own — or nothing when the time ran out or the wait was aborted.
   */
  async #waitAny(pool: BlockingWaiter, queues: readonly string[], blockMs: number, signal: AbortSignal | undefined): Promise<PoppedEnvelope[]> {
    const { layout } = this.#host;
    const unique = [...new Set(queues)];
    const done = new AbortController();
    const abort = (): void => done.abort();
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) done.abort();
    try {
      const waits = unique.map(async (queue): Promise<PoppedEnvelope | undefined> => {
        const reply = await pool.brpop(layout.queueKeys(queue), blockMs, done.signal);
        if (!reply) return undefined;
        done.abort();
        const [key, raw] = reply;
        return { queue, step: layout.parseListKey(key).step, key, raw };
      });
      const settled = await Promise.allSettled(waits);
      const popped = settled.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
      const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (popped.length === 0 && failed) throw failed.reason;
      return popped;
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  /** Puts a popped message that was never recorded back at the head of its list, exactly as it was. */
  async #putBack(popped: PoppedEnvelope): Promise<void> {
    try {
      await this.#host.commands().rpush(popped.key, popped.raw);
    } catch (error) {
      this.#host.warn(
        `kq/redis: could not return a message popped from ${JSON.stringify(popped.key)}; its envelope follows so it can be ` +
          `re-published by hand: ${popped.raw}`,
      );
      this.#host.reportError(error);
    }
  }

  async #claimScript(queues: readonly string[], max: number, noAck: boolean, popped: PoppedEnvelope | undefined): Promise<ClaimReply> {
    const host = this.#host;
    const { layout } = host;
    // One queue per call in the cluster layout (its records and lists share its slot); every queue at once otherwise.
    const scope = queues[0] as string;
    const args: Array<string | number> = [
      layout.cluster ? `${layout.prefix}{` : layout.prefix,
      layout.sep,
      max,
      noAck ? 1 : 0,
      host.leaseUs,
      host.visibilityUs,
      layout.steps.length,
      ...layout.steps,
      queues.length,
      ...queues,
    ];
    if (popped) args.push(1, popped.queue, popped.step, popped.raw, popped.handedOut ? 1 : 0);
    else args.push(0);
    // Waiting acks ride along (one call instead of two), except in the cluster layout, where they may be of any queue.
    const acks = layout.cluster ? [] : host.takeAcks();
    args.push(acks.length, ...settleArguments(acks));
    args.push(layout.cluster ? '}' : '');
    let reply: [string[], string[], number[], string];
    try {
      const keys = [layout.scopedKey('unacked', scope), layout.scopedKey('unackedIndex', scope), layout.scopedKey('quarantine', scope)];
      reply = (await CLAIM.run(host.commands(), keys, args)) as typeof reply;
    } catch (error) {
      host.acksFailed(acks, error);
      throw error;
    }
    const [taken, bad, acked, score] = reply;
    acks.forEach((ack, index) => host.settleAck(ack, acked[index] as number));
    for (let at = 0; at < bad.length; at += 2) {
      this.#quarantined++;
      host.warn(`kq/redis: moved an unreadable message from queue ${JSON.stringify(bad[at])} to ${layout.scopedKey('quarantine', scope)}: ${bad[at + 1]}`);
    }
    const claims: RedisClaim[] = [];
    let poppedTag: string | undefined;
    for (let at = 0; at < taken.length; at += 4) {
      const queue = taken[at] as string;
      const step = Number(taken[at + 1]);
      const raw = taken[at + 2] as string;
      const tag = taken[at + 3] as string;
      if (at === 0 && popped?.handedOut && raw === '') {
        // Recorded as handed out; the caller has the claim already.
        poppedTag = tag;
        continue;
      }
      let message: StoredMessage;
      try {
        message = decodeEnvelope(raw, { queue });
      } catch (error) {
        await this.#quarantineClaim(queue, step, raw, tag, score, error);
        continue;
      }
      const claim: RedisClaim = { queue, message, step, raw, tag, noAck, score };
      if (!noAck) host.hold(claim);
      claims.push(claim);
    }
    return { claims, poppedTag, score };
  }

  /**
   * A message BRPOP woke up with, handed out before its claim is recorded, so its handler starts a round trip
   * sooner: the record (which also claims the rest of the batch) is sent first, then the message is decoded and
   * handed out while the record is on its way. Crash safety is Kombu's: it too records a popped message only after
   * the pop, and what has not reached Redis is lost with the process in both. Settles wait for the record, so an
   * ack can never reach Redis before the claim it settles.
   */
  async #takePoppedEarly(
    queues: readonly string[],
    max: number,
    popped: PoppedEnvelope,
    onEarlyClaims: (claims: Claim[]) => void,
  ): Promise<ClaimReply> {
    let message: StoredMessage;
    try {
      message = decodeEnvelope(popped.raw, { queue: popped.queue });
    } catch (error) {
      // Unreadable: once recorded it is quarantined like any unreadable claim (the script quarantines what it cannot
      // read itself).
      const reply = await this.#recordPopped(queues, max, false, { ...popped, handedOut: true });
      if (reply.poppedTag !== undefined) await this.#quarantineClaim(popped.queue, popped.step, popped.raw, reply.poppedTag, reply.score, error);
      return reply;
    }
    // Decoded once: the record (sent before the hand-out, so it is on its way first) reuses it.
    const recording = this.#recordPopped(queues, max, false, { ...popped, handedOut: true, message });
    const tag = message.deliveryTag;
    const claim: RedisClaim = { queue: popped.queue, message, step: popped.step, raw: popped.raw, tag, noAck: false, score: '' };
    claim.recording = recording.then(
      ({ poppedTag, score }) => {
        claim.recording = undefined;
        // A tag the script read differently would make every settle miss; the lease then brings the message back.
        if (poppedTag !== tag) return false;
        claim.score = score;
        this.#host.hold(claim);
        return true;
      },
      () => {
        claim.recording = undefined; // never held: `holds` says so
        return false;
      },
    );
    onEarlyClaims([claim]);
    return recording;
  }

  /**
   * Records a message BRPOP popped: natively in Kombu's layout with acks late (native-claim.ts: the next claim takes
   * more if the lists' lengths say some wait), else with the claim script, which claims more in the same call. Between the pop and this script the message
   * lives only here — Kombu's crash window, which kq only has on the idle-to-busy edge — so a failure is retried,
   * and if Redis stays unreachable the message is pushed back to the head of its list.
   */
  async #recordPopped(queues: readonly string[], max: number, noAck: boolean, popped: PoppedEnvelope): Promise<ClaimReply> {
    let lastError: unknown;
    for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
      try {
        if (noAck || this.#host.layout.cluster || !this.#native.supported) return await this.#claimScript(queues, max, noAck, popped);
        const { quarantined, ...reply } = await this.#native.recordPopped(popped, queues);
        this.#quarantined += quarantined;
        return reply;
      } catch (error) {
        lastError = error;
        if (this.#host.isClosed()) break;
        await sleep(backoffCountdown(attempt, { factor: 100, maximum: Infinity, jitter: false }));
      }
    }
    try {
      await this.#host.commands().rpush(popped.key, popped.raw);
    } catch (error) {
      this.#host.warn(
        `kq/redis: could not record or return a message popped from ${JSON.stringify(popped.key)}; its envelope follows so it can be ` +
          `re-published by hand: ${popped.raw}`,
      );
      throw error;
    }
    throw lastError;
  }

  async #quarantineClaim(queue: string, step: number, raw: string, tag: string, score: string, error: unknown): Promise<void> {
    const { layout } = this.#host;
    const reason = error instanceof MalformedEnvelope ? error.reason : String(error);
    const key = layout.listKey(queue, step);
    this.#quarantined++;
    this.#host.warn(`kq/redis: moved an unreadable message from queue ${JSON.stringify(queue)} to ${layout.scopedKey('quarantine', queue)}: ${reason}`);
    await QUARANTINE.run(
      this.#host.commands(),
      [layout.scopedKey('unacked', queue), layout.scopedKey('unackedIndex', queue), layout.scopedKey('quarantine', queue)],
      [tag, score, quarantineRecord({ queue, key, reason, raw })],
    );
  }

  #noteIdle(setKey: string, idle: boolean): void {
    if (idle) {
      if (this.#idleSets.size > 1000) this.#idleSets.clear();
      this.#idleSets.set(setKey, true);
    } else {
      this.#idleSets.delete(setKey);
    }
  }
}

/** The first of each list, then the second of each, and so on. */
function interleave<T>(lists: ReadonlyArray<readonly T[]>): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let at = 0; at < longest; at++) {
    for (const list of lists) if (at < list.length) out.push(list[at] as T);
  }
  return out;
}
