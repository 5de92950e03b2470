// PushBatcher: the pushes of one burst become one LPUSH per list, in the order they were made.
import { describe, expect, it } from 'vitest';
import { PushBatcher } from '../src/push-batcher';

function recorder(fail?: (key: string) => boolean) {
  const commands: Array<{ key: string; values: string[] }> = [];
  const batcher = new PushBatcher(async (key, values) => {
    commands.push({ key, values: [...values] });
    if (fail?.(key)) throw new Error(`LPUSH ${key} failed`);
  });
  return { batcher, commands };
}

describe('PushBatcher', () => {
  it('sends the first push of a burst at once and the rest as one LPUSH per list, values in the order pushed', async () => {
    const { batcher, commands } = recorder();
    const pushes = [batcher.push('a', '1'), batcher.push('b', 'x'), batcher.push('a', '2'), batcher.push('a', '3')];
    expect(commands).toEqual([{ key: 'a', values: ['1'] }]); // the rest wait for the burst to end
    await Promise.all(pushes);
    expect(commands).toEqual([
      { key: 'a', values: ['1'] },
      { key: 'b', values: ['x'] },
      { key: 'a', values: ['2', '3'] },
    ]);
  });

  it('sends awaited pushes one by one without waiting a tick', async () => {
    const commands: Array<{ key: string; values: string[] }> = [];
    // Replies come back over I/O, as Redis's do.
    const batcher = new PushBatcher(async (key, values) => {
      commands.push({ key, values: [...values] });
      await new Promise((resolve) => setImmediate(resolve));
    });
    for (const value of ['1', '2', '3']) {
      const push = batcher.push('q', value);
      expect(commands.at(-1)).toEqual({ key: 'q', values: [value] });
      await push;
    }
    expect(commands).toHaveLength(3);
  });

  it('collects pushes made through chains of awaits, and a later turn starts a new command', async () => {
    const { batcher, commands } = recorder();
    const send = async (value: string) => {
      await Promise.resolve();
      await Promise.resolve();
      return batcher.push('q', value);
    };
    await Promise.all(['1', '2', '3', '4'].map(send));
    await batcher.push('q', '5');
    expect(commands).toEqual([
      { key: 'q', values: ['1'] },
      { key: 'q', values: ['2', '3', '4'] },
      { key: 'q', values: ['5'] },
    ]);
  });

  it('splits a large burst into commands of at most 1000 values, keeping the order', async () => {
    const { batcher, commands } = recorder();
    const values = Array.from({ length: 2500 }, (_, index) => String(index));
    await Promise.all(values.map((value) => batcher.push('q', value)));
    expect(commands.map((command) => command.values.length)).toEqual([1, 1000, 1000, 499]);
    expect(commands.flatMap((command) => command.values)).toEqual(values);
  });

  it('rejects every push of a failed command, and only those', async () => {
    const { batcher } = recorder((key) => key === 'bad');
    const results = await Promise.allSettled([batcher.push('bad', '1'), batcher.push('good', '2'), batcher.push('bad', '3')]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'rejected']);
  });

  it('reports a send that throws at once (no connection) through the pushes, and failAll rejects what waits', async () => {
    const throwing = new PushBatcher(() => {
      throw new Error('not connected');
    });
    await expect(throwing.push('q', '1')).rejects.toThrow('not connected');
    const { batcher, commands } = recorder();
    const sent = batcher.push('q', '1');
    const waiting = batcher.push('q', '2');
    batcher.failAll(new Error('closing'));
    await expect(waiting).rejects.toThrow('closing');
    await sent;
    await batcher.flush();
    expect(commands).toEqual([{ key: 'q', values: ['1'] }]);
  });

  it('pushAll joins the burst in place: values in order, split at 1000 across commands, one promise', async () => {
    const { batcher, commands } = recorder();
    const batch = Array.from({ length: 1500 }, (_, index) => `b${index}`);
    await Promise.all([batcher.push('q', 'before'), batcher.pushAll('q', batch), batcher.push('q', 'after'), batcher.pushAll('q', [])]);
    expect(commands.map((command) => command.values.length)).toEqual([1, 1000, 501]);
    expect(commands.flatMap((command) => command.values)).toEqual(['before', ...batch, 'after']);
  });

  it('pushAll rejects when any command holding its values fails', async () => {
    let sent = 0;
    const batcher = new PushBatcher(async () => {
      sent++;
      if (sent === 2) throw new Error('second LPUSH failed');
    });
    await expect(batcher.pushAll('q', Array.from({ length: 1200 }, String))).rejects.toThrow('second LPUSH failed');
  });
});
