import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';
import { PROMOTE_DELAYED, PUSH_DELAYED } from './lua-scripts';

/** Due messages moved per script call. */
const PROMOTE_BATCH = 500;
/**
 * Longest the timer sleeps without looking. Nudges arrive over PUB/SUB, which loses messages while the subscriber's
 * connection is down, and its reconnect looks again at once (`ready`): this only bounds how late a message can be
 * should a nudge be lost some other way. It is not a consumption poll (BRPOP is); every kq process runs a promoter, so
 * in an idle fleet of 200 a 30 s look was 7 script calls a second.
 */
export const MAX_SLEEP_MS = 300_000;

export interface DelayedPromoterOptions {
  commands: RedisClient;
  subscriber: RedisClient;
  layout: KeyLayout;
  /** The delayed sets to watch: `['']` in Kombu's layout (one set), the known queues in the cluster layout (one each). */
  scopes: () => Promise<readonly string[]>;
  onError: (error: unknown) => void;
}

/**
 * Delayed delivery held by Redis, not by a process: `push` adds the envelope to a sorted set scored by its due time
 * (server clock); the promoter of any kq process moves due messages to their queue lists atomically (Lua), with a
 * timer armed at the next due time. A publisher that adds a message due before everything else PUBLISHes a nudge
 * so every promoter re-arms its timer at once.
 */
export class DelayedPromoter {
  readonly #options: DelayedPromoterOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = true;
  promoted = 0;

  constructor(options: DelayedPromoterOptions) {
    this.#options = options;
  }

  /** Holds `envelope` for `queue`'s list `list` (an unprefixed list key) until `delayMs` from now. */
  static async push(commands: RedisClient, layout: KeyLayout, queue: string, list: string, envelope: string, delayMs: number): Promise<void> {
    const member = `${Buffer.byteLength(list, 'utf8')}:${list}${envelope}`;
    await PUSH_DELAYED.run(commands, [layout.scopedKey('delayed', queue)], [Math.max(0, Math.ceil(delayMs)), member, layout.key('delayedNudge')]);
  }

  async start(): Promise<void> {
    this.#stopped = false;
    const { subscriber, layout } = this.#options;
    const nudge = layout.key('delayedNudge');
    subscriber.on('message', (channel: string) => {
      if (channel === nudge) this.wake();
    });
    // After a reconnect the nudges sent meanwhile are gone: look again.
    subscriber.on('ready', () => this.wake());
    await subscriber.subscribe(nudge);
    this.wake();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Promote what is due now and re-arm the timer. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#promote()
      .catch((error: unknown) => {
        this.#options.onError(error);
        this.#arm(1000);
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  async #promote(): Promise<void> {
    let next = MAX_SLEEP_MS;
    for (const scope of await this.#options.scopes()) {
      const wait = await this.#promoteScope(scope);
      if (wait >= 0) next = Math.min(next, wait);
    }
    this.#arm(next);
  }

  /** Promotes what is due in one delayed set; resolves to ms until its next message is due, or -1 when it is empty. */
  async #promoteScope(scope: string): Promise<number> {
    const { commands, layout } = this.#options;
    for (;;) {
      const [moved, wait] = (await PROMOTE_DELAYED.run(commands, [layout.scopedKey('delayed', scope)], [layout.prefix, PROMOTE_BATCH])) as [
        number,
        number,
      ];
      this.promoted += moved;
      if (moved >= PROMOTE_BATCH) continue;
      return wait;
    }
  }

  #arm(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.wake();
    }, delayMs);
    this.#timer.unref();
  }
}
