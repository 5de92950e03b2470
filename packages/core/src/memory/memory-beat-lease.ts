import { KqError } from '../errors';
import type { BeatLease, BeatLeaseListener, BeatLeaseOptions, BeatLeadership, CommitOutcome, TickCommit } from '../leases/beat-lease';
import type { Channel, Transport } from '../transport';
import { MemoryBroker } from './memory-broker';

/** One schedule group on one in-process broker: who leads, who waits, and the recorded ticks. */
interface GroupState {
  leader: MemoryBeatLease | undefined;
  readonly waiting: MemoryBeatLease[];
  epoch: number;
  readonly lastTicks: Map<string, number>;
}

const groups = new WeakMap<MemoryBroker, Map<string, GroupState>>();

function groupOf(broker: MemoryBroker, group: string): GroupState {
  let byName = groups.get(broker);
  if (!byName) groups.set(broker, (byName = new Map()));
  let state = byName.get(group);
  if (!state) byName.set(group, (state = { leader: undefined, waiting: [], epoch: 0, lastTicks: new Map() }));
  return state;
}

/**
 * The beat lease of the memory transport: beats of one process that share a `memory://` broker elect one leader
 * among themselves (first come, then in order of arrival). Nothing outlives the process — it is for tests, demos
 * and single-process apps.
 */
export class MemoryBeatLease implements BeatLease {
  readonly kind = 'memory';
  readonly #transport: Transport;
  readonly #group: GroupState;
  #listener: BeatLeaseListener | undefined;
  #controller: AbortController | undefined;
  #channel: Promise<Channel> | undefined;

  constructor(transport: Transport, options: Pick<BeatLeaseOptions, 'group'>) {
    const broker = (transport as { broker?: unknown }).broker;
    if (!(broker instanceof MemoryBroker)) throw new KqError(`MemoryBeatLease needs a memory:// transport, not ${transport.name}.`);
    this.#transport = transport;
    this.#group = groupOf(broker, options.group);
  }

  async start(listener: BeatLeaseListener): Promise<void> {
    this.#listener = listener;
    if (this.#group.leader === undefined) this.#elect();
    else if (this.#group.leader !== this && !this.#group.waiting.includes(this)) this.#group.waiting.push(this);
  }

  async stop(): Promise<void> {
    const group = this.#group;
    const index = group.waiting.indexOf(this);
    if (index >= 0) group.waiting.splice(index, 1);
    if (group.leader === this) {
      group.leader = undefined;
      this.#controller?.abort(new KqError('This beat stopped.'));
      this.#listener?.deposed(new KqError('This beat stopped.'));
      const next = group.waiting.shift();
      if (next) next.#elect();
    }
    const channel = await this.#channel?.catch(() => undefined);
    this.#channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  #elect(): void {
    const group = this.#group;
    group.leader = this;
    const controller = new AbortController();
    this.#controller = controller;
    const leadership: BeatLeadership = {
      epoch: ++group.epoch,
      lastTicks: new Map(group.lastTicks),
      signal: controller.signal,
      commit: (record) => this.#commit(controller.signal, record),
    };
    this.#listener?.elected(leadership);
  }

  async #commit(signal: AbortSignal, record: TickCommit): Promise<CommitOutcome> {
    if (signal.aborted || this.#group.leader !== this) return 'fenced';
    const last = this.#group.lastTicks.get(record.entry);
    if (last !== undefined && record.tick <= last) return 'stale';
    if (record.publish) {
      this.#channel ??= this.#transport.createChannel();
      const { exchange, routingKey, message } = record.publish;
      await (await this.#channel).publish(exchange, routingKey, message);
    }
    this.#group.lastTicks.set(record.entry, record.tick);
    return 'committed';
  }
}
