import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { AckBatcher } from '../src/ack-batcher';
import { tableNames } from '../src/schema';

/** A pool whose statements answer when the test says so, recording the ids of each DELETE. */
function heldPool() {
  const batches: number[][] = [];
  const answers: Array<() => void> = [];
  const pool = {
    query(config: { values: [number[], string[]] }) {
      const ids = config.values[0];
      batches.push(ids);
      return new Promise((resolve) => answers.push(() => resolve({ rows: ids.map((id) => ({ id })) })));
    },
  };
  return { pool: pool as unknown as pg.Pool, batches, answers };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AckBatcher', () => {
  it('sends what queued while every connection waited for a commit as one batch when one returns', async () => {
    const { pool, batches, answers } = heldPool();
    const acks = new AckBatcher(pool, tableNames(), 1);
    const first = acks.ack(1, 'a');
    await turn();
    const later = [acks.ack(2, 'b')];
    await turn();
    later.push(acks.ack(3, 'c'));
    await turn();
    expect(batches).toEqual([[1]]);
    answers.shift()?.();
    expect(await first).toBe(true);
    await turn();
    expect(batches).toEqual([[1], [2, 3]]);
    answers.shift()?.();
    expect(await Promise.all(later)).toEqual([true, true]);
    const flushed = acks.flush();
    await flushed;
  });
});
