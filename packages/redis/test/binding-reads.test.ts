// The binding-set reads behind a publish: a burst of publishes to one exchange shares reads, and every call sees a
// read sent after it was made.
import { describe, expect, it } from 'vitest';
import type { RedisClient } from '../src/connection-factory';
import { KeyLayout, DEFAULT_KEY_NAMES, KOMBU_SEP } from '../src/key-layout';
import { RedisBindings } from '../src/redis-bindings';

const layout = new KeyLayout({ prefix: '', sep: KOMBU_SEP, steps: [0], fanoutPrefix: '/0.', fanoutPatterns: true, names: DEFAULT_KEY_NAMES });

/** A binding set whose SMEMBERS replies wait for `answer()`, each with the set as it was when the read was sent. */
function slowSet(): { bindings: RedisBindings; members: Set<string>; sent: () => number; answer: () => void } {
  const members = new Set<string>();
  const waiting: Array<() => void> = [];
  let sent = 0;
  const commands = {
    smembers: (): Promise<string[]> => {
      sent++;
      const read = [...members];
      return new Promise((resolve) => waiting.push(() => resolve(read)));
    },
  } as unknown as RedisClient;
  const answer = (): void => {
    for (const reply of waiting.splice(0)) reply();
  };
  return { bindings: new RedisBindings(() => commands, layout), members, sent: () => sent, answer };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('listBindings', () => {
  it('sends one read for a burst of eight lookups of one exchange while one is under way, two in all', async () => {
    const { bindings, members, sent, answer } = slowSet();
    members.add(layout.bindingMember({ routingKey: 'a', pattern: '', queue: 'qa' }));
    const lookups = Array.from({ length: 8 }, () => bindings.listBindings('reply.celery.pidbox'));
    expect(sent()).toBe(1);
    answer();
    await settle();
    expect(sent()).toBe(2);
    answer();
    const results = await Promise.all(lookups);
    expect(results.every((records) => records.length === 1 && records[0]?.queue === 'qa')).toBe(true);
    // Nothing kept: the next lookup reads again.
    void bindings.listBindings('reply.celery.pidbox');
    expect(sent()).toBe(3);
    answer();
  });

  it('never answers a lookup with a read sent before it was made', async () => {
    const { bindings, members, answer } = slowSet();
    const early = bindings.listBindings('x');
    // A binding made after the first read was sent, then a lookup: it must see the binding.
    members.add(layout.bindingMember({ routingKey: 'k', pattern: '', queue: 'late' }));
    const late = bindings.listBindings('x');
    answer(); // the early read saw no binding; the late lookup's read is sent after it
    await settle();
    answer();
    expect((await late).map((record) => record.queue)).toEqual(['late']);
    await early;
  });

  it('reads each exchange separately', async () => {
    const { bindings, sent, answer } = slowSet();
    const lookups = [bindings.listBindings('x'), bindings.listBindings('y')];
    expect(sent()).toBe(2);
    answer();
    await Promise.all(lookups);
  });
});
