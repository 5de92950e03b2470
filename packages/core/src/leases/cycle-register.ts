/**
 * The broker-side record of a periodic task's cycle: which cycle is the live one, which step it is at, and which run
 * (if any) is executing it. A transport offers it as `transport.cycleRegister()` (memory, Redis, RabbitMQ);
 * `defineCycleRegisterSuite` in @kq/test-harness checks an implementation. Every operation is atomic with respect to
 * the others, for all processes sharing the broker.
 *
 * A cycle is a chain of task messages, one at a time: step 0 is published when the cycle is created, and each run
 * advances the register to step n+1 *before* it publishes step n+1. A message whose step is behind the register is a
 * duplicate and is dropped; a message of another cycle is dropped; so one cycle at a time, one run at a time.
 */
export interface CycleRegister {
  /** `redis`, `amqp`, `memory`, or a custom transport's name. */
  readonly kind: string;
  /** Creates the register for `marker` unless one exists (test-and-set). True when this call created it. */
  create(key: string, marker: CycleMarker, ttlMs: number): Promise<boolean>;
  /**
   * Claims `marker`'s step for the run `token` for `claimMs` (calling again with the same token renews the claim):
   * `current` = claimed, go ahead; `busy` = another run holds a live claim on this step (a duplicate copy, or a run
   * whose worker may have died — try again after the claim runs out); `stale` = the cycle is past this step;
   * `superseded` = another cycle is the live one; `absent` = no register (expired or removed). Renews the TTL.
   */
  begin(key: string, marker: CycleMarker, token: string, claimMs: number, ttlMs: number): Promise<CycleBegin>;
  /** Moves the register from `from.step` to `toStep` and drops the claim, if it is still at `from`. Renews the TTL. */
  advance(key: string, from: CycleMarker, toStep: number, ttlMs: number): Promise<CycleAdvance>;
  /** The register, or null when there is none. */
  read(key: string): Promise<CycleState | null>;
  /** Deletes the register (ending its cycle) if it belongs to `cycle` (any cycle when omitted). True when deleted. */
  remove(key: string, cycle?: string): Promise<boolean>;
  /** Releases what the register holds (channels); the broker-side state stays. */
  close(): Promise<void>;
}

export interface CycleMarker {
  readonly cycle: string;
  readonly step: number;
}

export interface CycleState extends CycleMarker {
  /** Token of the run holding a live claim on the step, or null. */
  readonly claimedBy: string | null;
}

export type CycleBegin = 'current' | 'busy' | 'stale' | 'superseded' | 'absent';
export type CycleAdvance = 'advanced' | 'stale' | 'superseded' | 'absent';
