import { KqError } from '@kq/core';
import type { Logger } from '../log/logger';
import type { Pool } from './pool';

/** `--autoscale max,min`: the pool's size follows the reserved work between these bounds. */
export interface AutoscaleOptions {
  max: number;
  /** Default 0. */
  min?: number;
  /** Seconds without growth before the pool may shrink (default: AUTOSCALE_KEEPALIVE, else 30). */
  keepalive?: number;
}

export interface AutoscalerOptions extends AutoscaleOptions {
  pool: Pool;
  /** Tasks the worker holds: reserved, running and ETA-held (Celery's `len(state.reserved_requests)`). */
  qty: () => number;
  /** Called after the pool's size changed, so the consumer's prefetch follows it. */
  onResize: () => void;
  log: Logger;
  /** Milliseconds between periodic checks (default 1000). */
  interval?: number;
  /** Monotonic clock in ms (tests). */
  now?: () => number;
}

/** Celery's Autoscaler: `stats` reports it as `"autoscaler": {max, min, current, qty}`. */
export interface AutoscalerInfo {
  max: number;
  min: number;
  current: number;
  qty: number;
}

/**
 * Grows the pool at once when more tasks are reserved than it has children (up to `max`), and shrinks it back
 * toward `max(qty, min)` only after `keepalive` seconds without growth (Celery's `celery/worker/autoscale.py`).
 * Checked on every received task and every second. A shrink never kills a busy child: it leaves after its task.
 */
export class Autoscaler {
  readonly #pool: Pool;
  readonly #qty: () => number;
  readonly #onResize: () => void;
  readonly #log: Logger;
  readonly #interval: number;
  readonly #now: () => number;
  #max: number;
  #min: number;
  readonly keepalive: number;
  #lastScaleUp: number | null = null;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: AutoscalerOptions) {
    const [max, min] = validBounds(options.max, options.min ?? 0);
    this.#max = max;
    this.#min = min;
    this.keepalive = options.keepalive ?? Number(process.env['AUTOSCALE_KEEPALIVE'] ?? 30);
    if (!(this.keepalive > 0)) throw new KqError(`The autoscale keepalive must be a positive number of seconds, got ${this.keepalive}: it stops the pool from shrinking too fast.`);
    this.#pool = options.pool;
    this.#qty = options.qty;
    this.#onResize = options.onResize;
    this.#log = options.log;
    this.#interval = options.interval ?? 1000;
    this.#now = options.now ?? (() => performance.now());
  }

  get max(): number {
    return this.#max;
  }

  get min(): number {
    return this.#min;
  }

  /** The pool's current size. */
  get processes(): number {
    return this.#pool.limit;
  }

  get qty(): number {
    return this.#qty();
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.maybeScale(), this.#interval);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Grows or shrinks the pool for the current load; true when it changed the size. */
  maybeScale(): boolean {
    const procs = this.processes;
    const qty = this.qty;
    const up = Math.min(qty, this.#max);
    if (up > procs) {
      this.#scaleUp(up - procs);
      return true;
    }
    const down = Math.max(qty, this.#min);
    if (down < procs) return this.#scaleDown(procs - down);
    return false;
  }

  /** The `autoscale` control command: new bounds, applied now (shrink to a lower max, grow to a higher min). */
  update(max?: number | null, min?: number | null): [max: number, min: number] {
    const [newMax, newMin] = validBounds(max ?? this.#max, min ?? this.#min);
    if (newMax < this.processes) this.#resize(-(this.processes - newMax));
    this.#max = newMax;
    if (newMin > this.processes) this.#resize(newMin - this.processes);
    this.#min = newMin;
    return [this.#max, this.#min];
  }

  info(): AutoscalerInfo {
    return { max: this.#max, min: this.#min, current: this.processes, qty: this.qty };
  }

  #scaleUp(n: number): void {
    this.#lastScaleUp = this.#now();
    this.#resize(n);
  }

  #scaleDown(n: number): boolean {
    // Never before a scale-up, and only once `keepalive` passed since the last one (Celery's rule).
    if (this.#lastScaleUp === null || this.#now() - this.#lastScaleUp <= this.keepalive * 1000) return false;
    this.#resize(-n);
    return true;
  }

  #resize(delta: number): void {
    if (delta === 0) return;
    if (delta > 0) {
      this.#log.info(`Scaling up ${delta} processes.`);
      this.#pool.grow(delta);
    } else {
      this.#log.info(`Scaling down ${-delta} processes.`);
      this.#pool.shrink(-delta);
    }
    this.#onResize();
  }
}

function validBounds(max: number, min: number): [number, number] {
  if (!Number.isInteger(max) || !Number.isInteger(min) || min < 0 || max < 1 || min > max) {
    throw new KqError(`Autoscale bounds must be whole numbers with 0 <= min <= max and max >= 1, got max=${max} min=${min}.`);
  }
  return [max, min];
}
