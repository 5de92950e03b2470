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
  it('sends a burst as one LPUSH per list, values in the order pushed', async () => {
    const { batcher, commands } = recorder();
    const pushes = [batcher.push('a', '1'), batcher.push('b', 'x'), batcher.push('a', '2'), batcher.push('a', '3')];
    expect(commands).toEqual([]); // nothing before the burst ends
    await Promise.all(pushes);
    expect(commands).toEqual([
      { key: 'a', values: ['1', '2', '3'] },
      { key: 'b', values: ['x'] },
    ]);
  });

  it('collects pushes made through chains of awaits, and a later turn starts a new command', async () => {
    const { batcher, commands } = recorder();
    const send = async (value: string) => {
      await Promise.resolve();
      await Promise.resolve();
      return batcher.push('q', value);
    };
    await Promise.all(['1', '2', '3'].map(send));
    await batcher.push('q', '4');
    expect(commands).toEqual([
      { key: 'q', values: ['1', '2', '3'] },
      { key: 'q', values: ['4'] },
    ]);
  });

  it('splits a large burst into commands of at most 1000 values, keeping the order', async () => {
    const { batcher, commands } = recorder();
    const values = Array.from({ length: 2500 }, (_, index) => String(index));
    await Promise.all(values.map((value) => batcher.push('q', value)));
    expect(commands.map((command) => command.values.length)).toEqual([1000, 1000, 500]);
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
    const waiting = batcher.push('q', '1');
    batcher.failAll(new Error('closing'));
    await expect(waiting).rejects.toThrow('closing');
    await batcher.flush();
    expect(commands).toEqual([]);
  });

  it('pushAll joins the burst in place: values in order, split at 1000 across commands, one promise', async () => {
    const { batcher, commands } = recorder();
    const batch = Array.from({ length: 1500 }, (_, index) => `b${index}`);
    await Promise.all([batcher.push('q', 'before'), batcher.pushAll('q', batch), batcher.push('q', 'after'), batcher.pushAll('q', [])]);
    expect(commands.map((command) => command.values.length)).toEqual([1000, 502]);
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
