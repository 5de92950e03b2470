import { describe, expect, it } from 'vitest';
import { AsyncPool } from '../src/pool/async-pool';

/** Lets every pending promise callback run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('AsyncPool', () => {
  it('gives a released slot to the next job while the released one finishes, and is drained only when both ended', async () => {
    const pool = new AsyncPool(1);
    const order: string[] = [];
    const ackLanded = gate();
    pool.apply(async (release) => {
      order.push('a ran');
      release(); // its result is stored; its ack is still on its way
      await ackLanded.opened;
      order.push('a ended');
    });
    pool.apply(async () => {
      order.push('b ran');
    });
    await settle();
    expect(order).toEqual(['a ran', 'b ran']);
    let drained = false;
    void pool.drained().then(() => (drained = true));
    await settle();
    expect(drained).toBe(false);
    ackLanded.open();
    await pool.drained();
    expect(order).toEqual(['a ran', 'b ran', 'a ended']);
  });

  it('starts the next job after one that ended inline without nesting, however many wait', async () => {
    // A task that returns at once releases its slot and ends inside `job(release)`; the pool must go on from its loop,
    // not from inside that call (one stack frame more per waiting job).
    const pool = new AsyncPool(1);
    const first = gate();
    pool.apply(async (release) => {
      await first.opened;
      release();
    });
    const jobs = 20_000;
    let depth = 0;
    let deepest = 0;
    let ran = 0;
    for (let index = 0; index < jobs; index++) {
      pool.apply((release) => {
        depth++;
        deepest = Math.max(deepest, depth);
        ran++;
        release();
        depth--;
        return Promise.resolve();
      });
    }
    first.open();
    await pool.drained();
    expect(ran).toBe(jobs);
    expect(deepest).toBe(1);
  });

  it('keeps the slot of a job that never releases it until the job ends', async () => {
    const pool = new AsyncPool(1);
    const order: string[] = [];
    const done = gate();
    pool.apply(async () => {
      order.push('a ran');
      await done.opened;
      order.push('a ended');
    });
    pool.apply(async () => {
      order.push('b ran');
    });
    await settle();
    expect(order).toEqual(['a ran']);
    done.open();
    await pool.drained();
    expect(order).toEqual(['a ran', 'a ended', 'b ran']);
  });

  it('frees one slot however often a job releases it, so no more than `limit` jobs ever hold one', async () => {
    const pool = new AsyncPool(1);
    const gates = [gate(), gate(), gate()];
    let holding = 0;
    let most = 0;
    gates.forEach((g, index) =>
      pool.apply(async (release) => {
        holding++;
        most = Math.max(most, holding);
        if (index === 0) {
          holding--;
          release();
          release();
        }
        await g.opened;
        if (index !== 0) holding--;
      }),
    );
    await settle();
    expect(pool.active).toBe(1); // the second job; the third waits for its slot
    expect(pool.waiting).toBe(1);
    for (const g of gates) g.open();
    await pool.drained();
    expect(most).toBe(1);
  });
});
