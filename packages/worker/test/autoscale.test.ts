import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Logger } from '../src/log/logger';
import { Autoscaler } from '../src/pool/autoscaler';
import type { Pool } from '../src/pool/pool';

// The Autoscaler's rules (packages/worker/docs/pools.md#sizing-and-autoscaling, celery/worker/autoscale.py) on a pool
// stand-in and a fake clock.

class SizedPool implements Pool {
  readonly name = 'async';
  limit: number;
  readonly active = 0;
  readonly waiting = 0;
  readonly resizes: number[] = [];
  constructor(size: number) {
    this.limit = size;
  }
  start = async (): Promise<void> => undefined;
  apply = (): void => undefined;
  run = async (): Promise<unknown> => undefined;
  grow(n: number): void {
    this.limit += n;
    this.resizes.push(n);
  }
  shrink(n: number): void {
    this.limit -= n;
    this.resizes.push(-n);
  }
  drained = async (): Promise<void> => undefined;
  close = async (): Promise<void> => undefined;
  terminate = async (): Promise<void> => undefined;
}

function setup(options: { max: number; min: number; keepalive?: number }) {
  const pool = new SizedPool(options.min);
  let qty = 0;
  let now = 0;
  let resized = 0;
  const scaler = new Autoscaler({
    ...options,
    keepalive: options.keepalive ?? 30,
    pool,
    qty: () => qty,
    onResize: () => resized++,
    log: new Logger('autoscale', { level: 'error', sink: () => undefined }),
    now: () => now,
  });
  return {
    pool,
    scaler,
    setQty: (n: number) => (qty = n),
    advance: (seconds: number) => (now += seconds * 1000),
    resized: () => resized,
  };
}

describe('Autoscaler', () => {
  it('grows at once up to min(qty, max)', () => {
    const { pool, scaler, setQty, resized } = setup({ max: 10, min: 2 });
    setQty(1);
    expect(scaler.maybeScale()).toBe(false);
    setQty(5);
    expect(scaler.maybeScale()).toBe(true);
    expect(pool.limit).toBe(5);
    setQty(50);
    scaler.maybeScale();
    expect(pool.limit).toBe(10);
    expect(resized()).toBe(2);
    expect(scaler.info()).toEqual({ max: 10, min: 2, current: 10, qty: 50 });
  });

  it('shrinks toward max(qty, min) only after keepalive seconds without growth', () => {
    const { pool, scaler, setQty, advance } = setup({ max: 10, min: 2, keepalive: 30 });
    setQty(8);
    scaler.maybeScale();
    setQty(0);
    advance(29);
    expect(scaler.maybeScale()).toBe(false);
    expect(pool.limit).toBe(8);
    advance(2);
    expect(scaler.maybeScale()).toBe(true);
    expect(pool.limit).toBe(2);
    // Growth resets the clock.
    setQty(6);
    scaler.maybeScale();
    setQty(3);
    advance(10);
    expect(scaler.maybeScale()).toBe(false);
    advance(21);
    scaler.maybeScale();
    expect(pool.limit).toBe(3);
  });

  it('never shrinks before it ever grew', () => {
    const { pool, scaler, advance } = setup({ max: 4, min: 3 });
    scaler.update(null, 1); // min lowered below the pool's size: shrinking is still the keepalive rule's call
    advance(3600);
    expect(scaler.maybeScale()).toBe(false);
    expect(pool.limit).toBe(3);
  });

  it('applies new bounds from the autoscale command at once', () => {
    const { pool, scaler, setQty, resized } = setup({ max: 10, min: 2 });
    setQty(9);
    scaler.maybeScale();
    expect(scaler.update(4, null)).toEqual([4, 2]);
    expect(pool.limit).toBe(4);
    expect(scaler.update(null, 3)).toEqual([4, 3]);
    expect(pool.limit).toBe(4);
    expect(scaler.update(8, 6)).toEqual([8, 6]);
    expect(pool.limit).toBe(6);
    expect(resized()).toBe(3);
  });

  it('refuses bounds that make no sense', () => {
    expect(() => setup({ max: 0, min: 0 })).toThrow(/max >= 1/);
    expect(() => setup({ max: 2, min: 3 })).toThrow(/min <= max/);
    const { scaler } = setup({ max: 5, min: 1 });
    expect(() => scaler.update(2, 3)).toThrow(/min <= max/);
    expect(() => scaler.update(-1, null)).toThrow();
  });

  it('keeps the pool within [min, max] once it scaled, whatever the load does', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 0, max: 20 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 40 })), { maxLength: 60 }),
        (max, minSeed, steps) => {
          const min = minSeed % (max + 1);
          const { pool, scaler, setQty, advance } = setup({ max, min, keepalive: 30 });
          for (const [qty, seconds] of steps) {
            setQty(qty);
            advance(seconds);
            const before = pool.limit;
            scaler.maybeScale();
            expect(pool.limit).toBeGreaterThanOrEqual(min);
            expect(pool.limit).toBeLessThanOrEqual(max);
            // It grows only to serve reserved work, and shrinks never below what is reserved.
            if (pool.limit > before) expect(pool.limit).toBeLessThanOrEqual(Math.max(qty, min));
            if (pool.limit < before) expect(pool.limit).toBeGreaterThanOrEqual(Math.min(qty, max));
          }
        },
      ),
    );
  });
});
