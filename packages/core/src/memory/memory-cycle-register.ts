import { KqError } from '../errors';
import type { CycleAdvance, CycleBegin, CycleMarker, CycleRegister, CycleState } from '../leases/cycle-register';
import type { Transport } from '../transport';
import { MemoryBroker } from './memory-broker';

interface RegisterRecord {
  cycle: string;
  step: number;
  token: string | null;
  claimUntil: number;
  expiresAt: number;
}

const registers = new WeakMap<MemoryBroker, Map<string, RegisterRecord>>();

/** The cycle register of the memory transport: a map per in-process broker (see `CycleRegister`). */
export class MemoryCycleRegister implements CycleRegister {
  readonly kind = 'memory';
  readonly #records: Map<string, RegisterRecord>;

  constructor(transport: Transport) {
    const broker = (transport as { broker?: unknown }).broker;
    if (!(broker instanceof MemoryBroker)) throw new KqError(`MemoryCycleRegister needs a memory:// transport, not ${transport.name}.`);
    let records = registers.get(broker);
    if (!records) registers.set(broker, (records = new Map()));
    this.#records = records;
  }

  async create(key: string, marker: CycleMarker, ttlMs: number): Promise<boolean> {
    if (this.#live(key)) return false;
    this.#records.set(key, { cycle: marker.cycle, step: marker.step, token: null, claimUntil: 0, expiresAt: Date.now() + ttlMs });
    return true;
  }

  async begin(key: string, marker: CycleMarker, token: string, claimMs: number, ttlMs: number): Promise<CycleBegin> {
    const record = this.#live(key);
    if (!record) return 'absent';
    if (record.cycle !== marker.cycle) return 'superseded';
    if (record.step > marker.step) return 'stale';
    const now = Date.now();
    if (record.step === marker.step && record.token !== null && record.token !== token && record.claimUntil > now) return 'busy';
    Object.assign(record, { step: marker.step, token, claimUntil: now + claimMs, expiresAt: now + ttlMs });
    return 'current';
  }

  async advance(key: string, from: CycleMarker, toStep: number, ttlMs: number): Promise<CycleAdvance> {
    const record = this.#live(key);
    if (!record) return 'absent';
    if (record.cycle !== from.cycle) return 'superseded';
    if (record.step > from.step) return 'stale';
    Object.assign(record, { step: toStep, token: null, claimUntil: 0, expiresAt: Date.now() + ttlMs });
    return 'advanced';
  }

  async read(key: string): Promise<CycleState | null> {
    const record = this.#live(key);
    if (!record) return null;
    return { cycle: record.cycle, step: record.step, claimedBy: record.claimUntil > Date.now() ? record.token : null };
  }

  async remove(key: string, cycle?: string): Promise<boolean> {
    const record = this.#live(key);
    if (!record || (cycle !== undefined && record.cycle !== cycle)) return false;
    return this.#records.delete(key);
  }

  async close(): Promise<void> {}

  #live(key: string): RegisterRecord | undefined {
    const record = this.#records.get(key);
    if (record && record.expiresAt <= Date.now()) {
      this.#records.delete(key);
      return undefined;
    }
    return record;
  }
}
