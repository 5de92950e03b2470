// FairBacklog against a model of Kombu's round_robin_cycle: one FIFO per queue, the queue served last to the back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairBacklog } from '../src/fair-backlog';

type Command = { kind: 'push'; key: number; item: number } | { kind: 'shift' } | { kind: 'drain' };

class Model {
  order: number[];
  waiting = new Map<number, number[]>();

  constructor(keys: number[]) {
    this.order = [...new Set(keys)];
    for (const key of this.order) this.waiting.set(key, []);
  }

  push(key: number, item: number): void {
    this.waiting.get(key)?.push(item);
  }

  shift(): number | undefined {
    for (const key of this.order) {
      const items = this.waiting.get(key) as number[];
      if (items.length === 0) continue;
      this.order = [...this.order.filter((other) => other !== key), key];
      return items.shift();
    }
    return undefined;
  }

  drain(): number[] {
    const all = [...this.waiting.values()].flat();
    for (const items of this.waiting.values()) items.length = 0;
    return all;
  }

  get size(): number {
    return [...this.waiting.values()].reduce((total, items) => total + items.length, 0);
  }
}

describe('FairBacklog', () => {
  it('hands out items as the round-robin model does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 5 }),
        fc.array(
          fc.oneof(
            { weight: 5, arbitrary: fc.record({ kind: fc.constant('push' as const), key: fc.integer({ min: 0, max: 4 }), item: fc.nat() }) },
            { weight: 4, arbitrary: fc.constant({ kind: 'shift' as const }) },
            { weight: 1, arbitrary: fc.constant({ kind: 'drain' as const }) },
          ),
          { maxLength: 200 },
        ),
        (keys, commands: Command[]) => {
          const backlog = new FairBacklog<number, number>(keys);
          const model = new Model(keys);
          for (const command of commands) {
            if (command.kind === 'push') {
              if (!keys.includes(command.key)) {
                expect(() => backlog.push(command.key, command.item)).toThrow();
                continue;
              }
              backlog.push(command.key, command.item);
              model.push(command.key, command.item);
            } else if (command.kind === 'shift') {
              expect(backlog.shift()).toBe(model.shift());
            } else {
              expect(backlog.drain().sort((a, b) => a - b)).toEqual(model.drain().sort((a, b) => a - b));
            }
            expect(backlog.size).toBe(model.size);
            for (const key of keys) expect(backlog.has(key)).toBe((model.waiting.get(key)?.length ?? 0) > 0);
          }
        },
      ),
    );
  });
});
