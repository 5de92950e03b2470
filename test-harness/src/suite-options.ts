import type { Transport, TransportCapabilities } from '@kq/core';

/**
 * Reads broker state without going through the transport under test (a management API, raw Redis commands),
 * so the suite can cross-check what the transport reports.
 */
export interface BrokerProbe {
  /** Messages ready in the queue (not delivered, not unacked). */
  queueDepth(queue: string): Promise<number>;
  /** Messages delivered from the queue and not yet settled, where the broker can tell. */
  unackedCount?(queue: string): Promise<number>;
}

export interface TransportSuiteOptions {
  /** Shown as the top-level `describe` name, e.g. `memory` or `redis`. */
  name: string;
  /**
   * Makes a fresh, unconnected transport. Called once or more per test; transports made in one test must
   * share the same broker (a second transport stands for a second process).
   */
  create: () => Transport | Promise<Transport>;
  /** Defaults to `transport.capabilities` of a transport made by `create`. Decides which optional groups run. */
  capabilities?: TransportCapabilities;
  /** Independent view of the broker, used to cross-check queue depths and unacked counts. */
  probe?: BrokerProbe;
  /** Multiplies every wait and test timeout (slow CI, remote brokers, or short timeouts for self-tests). Default 1. */
  timeoutScale?: number;
  /**
   * Simulates a hard crash of a process holding unacked deliveries: drop the connection or stop the process's
   * store without restoring anything. Needed (with `capabilities.crashRecovery`) for the crash-recovery group.
   */
  crash?: (transport: Transport) => void | Promise<void>;
  /** How long after `crash` the deliveries must come back (the visibility timeout plus slack). Default 10 000 ms. */
  recoveryTimeoutMs?: number;
  /**
   * For stores that hold deliveries under a lease (Redis, PostgreSQL): how long one lease lasts, ms, before it must
   * be renewed. Enables the lease checks: a live holder keeps what it holds well past the lease (renewal).
   */
  leaseMs?: number;
  /**
   * Makes a transport on the same broker whose leases are never renewed: a process frozen by a long pause, which
   * settles what it held when it wakes. Required with `leaseMs` (the fencing check fails without it): once another
   * process took the delivery back, the frozen one's ack is refused with `StaleDeliveryError` and changes nothing.
   */
  createStalled?: () => Transport | Promise<Transport>;
  /**
   * A module a second OS process imports to make a transport on the same broker: its `createTransport()` export (or
   * default export) is called with no arguments; a `.ts` module loads through tsx. Enables the checks that kill a
   * real process with SIGKILL mid-delivery, so crash recovery is proven across processes, not only across
   * transports in one event loop.
   */
  peerModule?: string;
  /** Environment for the peer process: what its module reads to reach this run's broker namespace. */
  peerEnv?: Readonly<Record<string, string>>;
  /** Priority values the suite publishes with; each must be its own bucket. Default [0, 3, 6, 9] (Kombu's steps). */
  priorityLevels?: readonly number[];
  /**
   * The step in which the broker delays messages, ms (RabbitMQ's Kombu ladder: whole seconds, rounded up). Delay
   * checks space their due times at least this far apart. Default 1.
   */
  delayResolutionMs?: number;
  /**
   * How late a delayed message may arrive after it fell due (beyond `delayResolutionMs`), ms, with a consumer
   * waiting: the store's own step between looking for due messages (a poll or sweep interval) plus scheduling slack.
   * Default 250.
   */
  delayToleranceMs?: number;
  /**
   * For a polling transport (a `VirtualTransport`): makes a transport on the same broker whose waiting claims block
   * for `pollIntervalMs`. The cancel check waits on one with a long poll (5 s) and bounds the cancel well below it,
   * so a claim that ignores the cancel is seen; without this hook, a polling transport's poll must already be that
   * long (else the check fails saying so).
   */
  createWithPollInterval?: (pollIntervalMs: number) => Transport | Promise<Transport>;
  /** Runs of the fast-check model test. Default 25. */
  modelRuns?: number;
  /** Longest operation sequence per model run. Default 30. */
  modelMaxOperations?: number;
  /** Fixed fast-check seed, to replay a failure the suite reported. */
  modelSeed?: number;
  /**
   * Whether re-declaring an entity with different options fails with `PreconditionFailed` (AMQP and the virtual
   * transports detect it). Set false for a transport that cannot tell; the check is then skipped. Default true.
   */
  detectsMismatchedRedeclaration?: boolean;
  /**
   * Checks to skip, by the name of their exported check function (e.g. `checkFairnessWidePrefetch`), with the
   * reason — a known limitation of the broker, stated where everyone sees it: in the skipped test's name.
   */
  skipChecks?: Readonly<Record<string, string>>;
}

/** The options with every default applied and the capabilities known. */
export interface SuiteSetup {
  readonly name: string;
  readonly create: () => Transport | Promise<Transport>;
  readonly capabilities: TransportCapabilities;
  readonly probe: BrokerProbe | undefined;
  readonly timeoutScale: number;
  readonly crash: ((transport: Transport) => void | Promise<void>) | undefined;
  readonly recoveryTimeoutMs: number;
  readonly leaseMs: number | undefined;
  readonly createStalled: (() => Transport | Promise<Transport>) | undefined;
  readonly peerModule: string | undefined;
  readonly peerEnv: Readonly<Record<string, string>>;
  readonly priorityLevels: readonly number[];
  readonly delayResolutionMs: number;
  readonly delayToleranceMs: number;
  readonly createWithPollInterval: ((pollIntervalMs: number) => Transport | Promise<Transport>) | undefined;
  readonly modelRuns: number;
  readonly modelMaxOperations: number;
  readonly modelSeed: number | undefined;
  readonly detectsMismatchedRedeclaration: boolean;
  readonly skipChecks: Readonly<Record<string, string>>;
}

/** Applies the defaults; makes (and closes, unconnected) one transport when the capabilities are not given. */
export async function resolveSuiteSetup(options: TransportSuiteOptions): Promise<SuiteSetup> {
  const capabilities = options.capabilities ?? (await capabilitiesOf(options.create));
  const levels = (options.priorityLevels ?? [0, 3, 6, 9]).filter((level) => level <= capabilities.maxPriority);
  return {
    name: options.name,
    create: options.create,
    capabilities,
    probe: options.probe,
    timeoutScale: options.timeoutScale ?? 1,
    crash: options.crash,
    recoveryTimeoutMs: options.recoveryTimeoutMs ?? 10_000,
    leaseMs: options.leaseMs,
    createStalled: options.createStalled,
    peerModule: options.peerModule,
    peerEnv: { ...(options.peerEnv ?? {}) },
    priorityLevels: [...new Set(levels)].sort((a, b) => a - b),
    delayResolutionMs: options.delayResolutionMs ?? 1,
    delayToleranceMs: options.delayToleranceMs ?? 250,
    createWithPollInterval: options.createWithPollInterval,
    modelRuns: options.modelRuns ?? 25,
    modelMaxOperations: options.modelMaxOperations ?? 30,
    modelSeed: options.modelSeed,
    detectsMismatchedRedeclaration: options.detectsMismatchedRedeclaration ?? true,
    skipChecks: { ...(options.skipChecks ?? {}) },
  };
}

async function capabilitiesOf(create: () => Transport | Promise<Transport>): Promise<TransportCapabilities> {
  const transport = await create();
  try {
    return transport.capabilities;
  } finally {
    // It was never connected; closing only releases what the constructor may hold.
    await transport.close().catch(() => undefined);
  }
}
