import { randomUUID } from 'node:crypto';
import { Exchange, Queue, type BeatLease, type BeatLeaseOptions, type BeatLeadership, type TickCommit, type Transport } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { testMessage } from '../test-messages';
import { waitFor } from '../wait-for';
import { capabilityOf, openTransports, suiteTitle, type CapabilitySuiteOptions } from './capability-suite-options';

export interface BeatLeaseSuiteOptions extends CapabilitySuiteOptions {
  /** Lease settings besides the group (each test makes its own group). Default: leaseMs 2000, renewIntervalMs 100. */
  leaseOptions?: Partial<Omit<BeatLeaseOptions, 'group'>>;
  /**
   * Ends `lease`'s leadership the way the broker would if its process froze or died (Redis: the lease key expires;
   * RabbitMQ: the connection drops). Enables the check that a deposed leader's commit is fenced off.
   */
  loseLeadership?: (lease: BeatLease, transport: Transport) => Promise<void>;
  /** Removes what a test's group left on the broker (lease keys, the lease queue). */
  cleanup?: (transport: Transport, group: string) => Promise<void>;
}

/**
 * Checks a transport's `beatLease()` against core's `BeatLease` contract: one leader at a time, commits recorded and
 * published together, stale ticks refused, a new leader resuming from the recorded ticks with a greater epoch, and
 * (with `loseLeadership`) a deposed leader fenced off. Call at the top level of a test file.
 */
export function defineBeatLeaseSuite(options: BeatLeaseSuiteOptions): void {
  const title = suiteTitle('beat lease', options);
  (options.skip ? describe.skip : describe)(title, () => {
    it('one leader at a time; commits are recorded and sent together; a stopped leader hands over its state', async () => {
      await withGroup(options, 2, async ({ leases: [a, b], queue, ids }) => {
        const leaderA = await elect(a!);
        let leaderB: BeatLeadership | undefined;
        const electedB = elect(b!).then((leadership) => (leaderB = leadership));
        expect(leaderA.epoch).toBeGreaterThan(0);
        expect(await leaderA.commit(tick(queue, 'e', 1000))).toBe('committed');
        expect(await leaderA.commit(tick(queue, 'e', 1000))).toBe('stale');
        expect(await leaderA.commit(tick(queue, 'e', 500))).toBe('stale');
        expect(await leaderA.commit(tick(queue, 'f', 5000))).toBe('committed');
        expect(await leaderA.commit({ entry: 'g', tick: 7000 })).toBe('committed'); // a skipped tick: recorded, nothing sent
        expect(leaderB).toBeUndefined(); // B waits in line while A leads
        await a!.stop();
        await waitFor(() => leaderA.signal.aborted, 2000, 'A to give up its leadership on stop');
        await electedB;
        expect(leaderB!.epoch).toBeGreaterThan(leaderA.epoch);
        expect(Object.fromEntries(leaderB!.lastTicks)).toEqual({ e: 1000, f: 5000, g: 7000 });
        expect(await leaderA.commit(tick(queue, 'e', 3000))).toBe('fenced');
        expect(await leaderB!.commit(tick(queue, 'e', 2000))).toBe('committed');
        expect(await ids()).toEqual(['e-1000', 'f-5000', 'e-2000']);
        await b!.stop();
        await waitFor(() => leaderB!.signal.aborted, 2000, 'B to give up its leadership on stop');
      });
    });

    it.skipIf(!options.loseLeadership)('a leader that lost its lease is fenced off: its commit sends nothing', async () => {
      await withGroup(options, 2, async ({ leases: [a, b], transports: [transportA], queue, ids }) => {
        const leaderA = await elect(a!);
        expect(await leaderA.commit(tick(queue, 'e', 1000))).toBe('committed');
        const electedB = elect(b!);
        await options.loseLeadership!(a!, transportA!);
        const leaderB = await electedB;
        expect(leaderB.epoch).toBeGreaterThan(leaderA.epoch);
        expect(leaderB.lastTicks.get('e')).toBe(1000);
        expect(await leaderA.commit(tick(queue, 'e', 2000))).toBe('fenced');
        expect(await leaderB.commit(tick(queue, 'e', 2000))).toBe('committed');
        expect(await ids()).toEqual(['e-1000', 'e-2000']);
      });
    });
  });
}

interface GroupContext {
  leases: BeatLease[];
  transports: Transport[];
  queue: string;
  /** Takes every message in the test's queue: their ids, in order. */
  ids: () => Promise<string[]>;
}

async function withGroup(options: BeatLeaseSuiteOptions, count: number, body: (context: GroupContext) => Promise<void>): Promise<void> {
  const group = `beat-suite-${randomUUID()}`;
  const queue = `${group}.q`;
  const transports = await openTransports(options.create, count + 1);
  const [observer, ...members] = transports as [Transport, ...Transport[]];
  const leaseOptions: BeatLeaseOptions = { group, leaseMs: 2000, renewIntervalMs: 100, ...options.leaseOptions };
  const leases = members.map((transport) => capabilityOf(transport, 'beatLease')(leaseOptions));
  const channel = await observer.createChannel();
  try {
    await channel.declareQueue(new Queue(queue, { exchange: new Exchange(queue, { type: 'direct' }), routingKey: queue, durable: false }));
    const ids = async (): Promise<string[]> => {
      const taken: string[] = [];
      for (let delivery = await channel.get(queue, { noAck: true }); delivery; delivery = await channel.get(queue, { noAck: true })) {
        taken.push(String(delivery.headers['id']));
      }
      return taken;
    };
    await body({ leases, transports: members, queue, ids });
  } finally {
    await Promise.all(leases.map((lease) => lease.stop().catch(() => undefined)));
    await channel.deleteQueue(queue).catch(() => undefined);
    await channel.deleteExchange(queue).catch(() => undefined);
    await options.cleanup?.(observer, group);
    await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
  }
}

/** Campaigns until elected. */
function elect(lease: BeatLease): Promise<BeatLeadership> {
  return new Promise((resolve, reject) => {
    lease.start({ elected: resolve, deposed: () => undefined, error: () => undefined }).catch(reject);
  });
}

/** The commit of `entry`'s tick `at`: a message to `queue` whose `id` header is `<entry>-<at>`. */
function tick(queue: string, entry: string, at: number): TickCommit {
  return { entry, tick: at, publish: { exchange: queue, routingKey: queue, message: testMessage(`${entry}-${at}`, { headers: { id: `${entry}-${at}` } }) } };
}
