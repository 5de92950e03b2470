import { MemoryChordJoin } from './memory-chord-join';
import type { ResultBackend, StoreResultOptions, WaitForResultOptions } from './result-backend';
import { isReadyState, type ResultMeta } from './result-meta';
import { waitForResultMeta, type ResultWaiter } from './result-waiter';

interface Entry {
  meta: ResultMeta;
  expiresAt: number;
}

const stores = new Map<string, Map<string, Entry>>();
const joins = new Map<string, MemoryChordJoin>();

/** Results kept in this process (`memory://`), shared by backends with the same name; waiters are pushed. */
export class MemoryResultBackend implements ResultBackend {
  readonly name = 'memory';
  readonly pushes = true;
  readonly #entries: Map<string, Entry>;
  readonly #waiters = new Map<string, Set<ResultWaiter>>();
  static readonly #backends = new Map<string, Set<MemoryResultBackend>>();
  readonly #store: string;
  readonly groups: MemoryChordJoin;
  readonly chordJoin: MemoryChordJoin;

  constructor(store = 'default') {
    this.#store = store;
    let join = joins.get(store);
    if (!join) {
      join = new MemoryChordJoin();
      joins.set(store, join);
    }
    this.groups = join;
    this.chordJoin = join;
    let entries = stores.get(store);
    if (!entries) {
      entries = new Map();
      stores.set(store, entries);
    }
    this.#entries = entries;
    const peers = MemoryResultBackend.#backends.get(store) ?? new Set();
    peers.add(this);
    MemoryResultBackend.#backends.set(store, peers);
  }

  static fromUrl(url: string): MemoryResultBackend {
    return new MemoryResultBackend(new URL(url).hostname || 'default');
  }

  async store(meta: ResultMeta, options: StoreResultOptions = {}): Promise<void> {
    const current = this.#live(meta.task_id);
    if (current?.status === 'SUCCESS' && meta.status !== 'SUCCESS') return;
    const expiresMs = options.expiresMs ?? 86_400_000;
    this.#entries.set(meta.task_id, { meta, expiresAt: expiresMs > 0 ? Date.now() + expiresMs : Infinity });
    if (isReadyState(meta.status)) {
      for (const backend of MemoryResultBackend.#backends.get(this.#store) ?? []) backend.#notify(meta);
    }
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    return this.#live(taskId) ?? null;
  }

  waitFor(taskId: string, options: WaitForResultOptions = {}): Promise<ResultMeta> {
    const current = this.#live(taskId);
    if (current && isReadyState(current.status)) return Promise.resolve(current);
    return waitForResultMeta(taskId, options, (waiter) => {
      const waiters = this.#waiters.get(taskId) ?? new Set();
      this.#waiters.set(taskId, waiters);
      waiters.add(waiter);
      return () => {
        waiters.delete(waiter);
        if (waiters.size === 0) this.#waiters.delete(taskId);
      };
    });
  }

  async forget(taskId: string): Promise<void> {
    this.#entries.delete(taskId);
  }

  async close(): Promise<void> {
    MemoryResultBackend.#backends.get(this.#store)?.delete(this);
  }

  #live(taskId: string): ResultMeta | undefined {
    const entry = this.#entries.get(taskId);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(taskId);
      return undefined;
    }
    return entry.meta;
  }

  #notify(meta: ResultMeta): void {
    for (const waiter of [...(this.#waiters.get(meta.task_id) ?? [])]) waiter.resolve(meta);
  }
}
