import type { ChordJoin, GroupStore } from './group-store';
import type { ResultMeta } from './result-meta';

export interface StoreResultOptions {
  /** Keep the result this long (ms); Celery's `result_expires` (1 day). 0 = forever. */
  expiresMs?: number;
  /** The task message's `reply_to` and `correlation_id` (the RPC backend replies there). */
  replyTo?: string;
  correlationId?: string;
}

export interface WaitForResultOptions {
  /** Give up after this long (ms) with `OperationTimeout`. Default: wait forever. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Where task results live, in Celery's formats so Python clients read kq results and the other way round. A
 * backend that can push (`pushes`) wakes waiters without polling (Redis pub/sub, RPC replies).
 */
export interface ResultBackend {
  readonly name: string;
  /** `waitFor` is woken by the backend, not by polling. */
  readonly pushes: boolean;
  /** Stores a state. A later non-success state never overwrites a stored SUCCESS (Celery's rule). */
  store(meta: ResultMeta, options?: StoreResultOptions): Promise<void>;
  /** The latest stored meta, or null when nothing is known (PENDING). */
  get(taskId: string): Promise<ResultMeta | null>;
  /** Resolves with the meta once the task reaches a ready state. */
  waitFor(taskId: string, options?: WaitForResultOptions): Promise<ResultMeta>;
  /** Called when a task is about to be sent: subscribe now so no result can be missed. */
  onTaskCall?(taskId: string): Promise<void>;
  forget(taskId: string): Promise<void>;
  close(): Promise<void>;
  /** Group results (`GroupResult.save`), where the backend keeps them. */
  readonly groups?: GroupStore;
  /**
   * A native chord join (Redis, memory). Without one, chords are joined by Celery's `celery.chord_unlock` task, which
   * polls the header's results — unless `chordsRefused` says the backend cannot hold them at all. Checked by
   * `defineChordJoinSuite` of @kq/test-harness.
   */
  readonly chordJoin?: ChordJoin;
  /** Why this backend cannot run chords (rpc://: results go to one client, so no worker can join them). */
  readonly chordsRefused?: string;
}
