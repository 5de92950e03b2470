import type { PendingAck } from './ack-batcher';
import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';
import { ACK, RENEW } from './lua-scripts';
import { settleArguments } from './redis-claim';
import type { RedisClaim } from './redis-claimer';

/**
 * The two script calls that keep held claims in Redis: acks (forgetting each claim still ours) and the heartbeat
 * (re-scoring them). One call per scope: the one of Kombu's layout, or each queue's in the cluster's, where every
 * queue's records are in a slot of their own (those calls go side by side).
 */
export class ClaimUpkeep {
  readonly #layout: KeyLayout;
  readonly #leaseUs: number;
  readonly #visibilityUs: number;

  constructor(layout: KeyLayout, leaseUs: number, visibilityUs: number) {
    this.#layout = layout;
    this.#leaseUs = leaseUs;
    this.#visibilityUs = visibilityUs;
  }

  async sendAcks(commands: RedisClient, acks: ReadonlyArray<PendingAck<RedisClaim>>): Promise<void> {
    if (!this.#layout.cluster) return this.#sendAcksOf(commands, '', acks);
    await Promise.all([...groupBy(acks, (ack) => ack.target.queue)].map(([queue, group]) => this.#sendAcksOf(commands, queue, group)));
  }

  /** One heartbeat: re-scores the claims still ours; resolves to those taken from us (not those an ack removed). */
  async renew(commands: RedisClient, claims: readonly RedisClaim[]): Promise<RedisClaim[]> {
    const groups = groupBy(claims, (claim) => (this.#layout.cluster ? claim.queue : ''));
    const lost = await Promise.all([...groups].map(([scope, group]) => this.#renewOf(commands, scope, group)));
    return lost.flat();
  }

  async #sendAcksOf(commands: RedisClient, scope: string, acks: ReadonlyArray<PendingAck<RedisClaim>>): Promise<void> {
    const results = (await ACK.run(commands, this.#keys(scope), settleArguments(acks))) as number[];
    // 0 (gone already) is done too: an ack ioredis re-sent after a reconnect, or of a message a sweep took back.
    acks.forEach((ack, index) => ack.settle(results[index] !== -1));
  }

  async #renewOf(commands: RedisClient, scope: string, group: readonly RedisClaim[]): Promise<RedisClaim[]> {
    const args: Array<string | number> = [this.#leaseUs, this.#visibilityUs];
    for (const claim of group) args.push(claim.tag, claim.score);
    const [score, positions] = (await RENEW.run(commands, this.#keys(scope), args)) as [string, number[]];
    const gone = new Set(positions);
    const taken: RedisClaim[] = [];
    group.forEach((claim, index) => {
      if (!gone.has(index + 1)) claim.score = score;
      // An ack on its way removed it: not taken from us.
      else if (!claim.settling) taken.push(claim);
    });
    return taken;
  }

  #keys(scope: string): string[] {
    return [this.#layout.scopedKey('unacked', scope), this.#layout.scopedKey('unackedIndex', scope)];
  }
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
