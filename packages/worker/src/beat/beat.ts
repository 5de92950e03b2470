import {
  KqError,
  TypedEmitter,
  UnsupportedFeature,
  sanitizeUrl,
  type BeatLease,
  type BeatLeaseOptions,
  type BeatLeadership,
  type CommitOutcome,
  type Entity,
  type TickCommit,
  type Transport,
} from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import { Logger, type LogLevel } from '../log/logger';
import { formatIsoDate } from '../protocol/index';
import { beatTaskId } from './deterministic-id';
import { BeatScheduleError } from './errors';
import { planTicks } from './misfire';
import { ScheduleEntry, type BeatEntryDefinition, type MisfirePolicy } from './schedule-entry';
import { prepareTaskMessage } from '../task/prepare-task-message';
import { clientEventDispatcher } from '../events/task-sent';
import { onStopSignals } from '../platform/stop-signals';

export interface BeatOptions {
  /** The entries to send. */
  schedule: readonly BeatEntryDefinition[];
  /** Processes with the same group elect one leader and share one last-run state. Default: the app's name. */
  group?: string;
  /** Default time zone of cron entries. Default: the app's `timezone`. */
  timezone?: string;
  /** Default misfire policy. Default `run-once`. */
  misfire?: MisfirePolicy;
  /** Default seconds a tick may be late and still be on time. Default 60. */
  misfireGrace?: number;
  /** Most missed ticks of one entry a new leader considers (the latest ones). Default 1000. */
  maxCatchUp?: number;
  /** How long a crashed leader's lease blocks a takeover (Redis), ms. Default 5000. */
  leaseMs?: number;
  /** How often the leader renews its lease and followers try to take over, ms. Default leaseMs / 5. */
  renewIntervalMs?: number;
  /** A broker-side lease to use instead of the transport's own (custom transports, tests). */
  lease?: BeatLease;
  logger?: Logger;
  loglevel?: LogLevel;
}

export type BeatEvents = {
  /** This process became the leader; `epoch` is its fencing token. */
  elected: [epoch: number];
  /** This process stopped being the leader. */
  deposed: [reason: Error];
  /** A tick's message was recorded and published. */
  sent: [entry: string, tick: Date, taskId: string];
  /** Due ticks of an entry were recorded without being sent (misfire policy, `maxCatchUp`). */
  skipped: [entry: string, count: number];
  error: [error: Error];
};

/** Longest the leader sleeps between looks at the schedule (clock changes, a lost lease, stop()). */
const MAX_SLEEP_MS = 1000;
/** Wait before retrying an entry whose commit failed (broker unreachable). */
/** How often the leader tells monitors about an unchanged schedule (`beat-schedule` events). */
const ANNOUNCE_MS = 5000;
const RETRY_MS = 1000;

/**
 * kq beat: sends scheduled tasks (cron expressions and intervals) as Celery task messages. Any number of beat
 * processes may run; one is leader at a time through a lease held by the broker, and only the leader sends. Every
 * tick is committed to the broker together with its message (see `BeatLease`), so a new leader resumes exactly
 * after the last tick its predecessor sent: nothing twice, nothing skipped (within the misfire grace).
 *
 *   const beat = new Beat(app, { schedule: [{ name: 'report', task: 'proj.report', cron: '0 7 * * *', timezone: 'Europe/Paris' }] });
 *   await beat.start();
 */
export class Beat extends TypedEmitter<BeatEvents> {
  readonly app: AppContract<TypedTasks>;
  readonly group: string;
  readonly entries: readonly ScheduleEntry[];
  readonly log: Logger;
  readonly maxCatchUp: number;
  readonly #options: BeatOptions;
  #lease: BeatLease | undefined;
  #leadership: BeatLeadership | undefined;
  #leading: Promise<void> | undefined;
  #running = false;

  constructor(app: AppContract<TypedTasks>, options: BeatOptions) {
    super();
    this.app = app;
    this.#options = options;
    this.group = options.group ?? app.name;
    if (this.group === '') throw new BeatScheduleError('The beat group name must not be empty.');
    const defaults = {
      timezone: options.timezone ?? app.conf.timezone,
      misfire: options.misfire ?? 'run-once',
      misfireGrace: options.misfireGrace ?? 60,
    };
    if (!Array.isArray(options.schedule)) throw new BeatScheduleError('The beat schedule must be a list of entries.');
    const entries = options.schedule.map((definition) => new ScheduleEntry(definition, defaults));
    const names = new Set<string>();
    for (const entry of entries) {
      if (names.has(entry.name)) throw new BeatScheduleError(`Two schedule entries are named ${JSON.stringify(entry.name)}; names must be unique.`);
      names.add(entry.name);
    }
    this.entries = entries;
    this.maxCatchUp = Math.max(1, Math.trunc(options.maxCatchUp ?? 1000));
    this.log = options.logger ?? new Logger(`beat.${this.group}`, { level: options.loglevel ?? 'info' });
  }

  /** True while this process is the leader. */
  get isLeader(): boolean {
    return this.#leadership !== undefined && !this.#leadership.signal.aborted;
  }

  /** Connects and starts campaigning; resolves once this process is a candidate (not necessarily the leader). */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      await this.app.connection.connect();
      const transport = await this.app.connection.transport();
      this.#lease = this.#options.lease ?? (await this.#createLease(transport));
      await this.#lease.start({
        elected: (leadership) => this.#onElected(leadership),
        deposed: (reason) => {
          this.#leadership = undefined;
          this.log.warning(`No longer the leader of schedule ${this.group}: ${reason.message}`);
          this.emit('deposed', reason);
        },
        error: (error) => {
          this.log.warning(`beat lease: ${error.message}`);
          this.emit('error', error);
        },
      });
    } catch (error) {
      this.#running = false;
      throw error;
    }
    const names = this.entries.map((entry) => `${entry.name} (${entry.describe()})`).join(', ');
    this.log.info(`beat for schedule ${this.group} on ${sanitizeUrl(this.app.conf.broker)} (${this.#lease.kind} lease): ${names || 'no entries'}`);
  }

  /** Stops sending and gives up leadership at once, so a follower takes over without waiting for the lease to expire. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    await this.#lease?.stop();
    await this.#leading?.catch(() => undefined);
    this.#leadership = undefined;
    this.log.info(`beat for schedule ${this.group} stopped`);
  }

  /** Installs SIGTERM/SIGINT handlers that stop the beat (and then call `onStopped`). Returns the uninstaller. */
  installSignalHandlers(onStopped: () => void = () => process.exit(0)): () => void {
    return onStopSignals((signal) => {
      this.log.warning(`${signal}: stopping beat`);
      void this.stop().then(onStopped, (error: unknown) => {
        this.log.error(`stopping beat failed: ${String(error)}`);
        onStopped();
      });
    });
  }

  async #createLease(transport: Transport): Promise<BeatLease> {
    const leaseMs = this.#options.leaseMs ?? 5000;
    if (!(leaseMs > 0)) throw new BeatScheduleError(`leaseMs must be a positive number of milliseconds; got ${leaseMs}.`);
    const options: BeatLeaseOptions = {
      group: this.group,
      leaseMs,
      renewIntervalMs: this.#options.renewIntervalMs ?? Math.max(50, Math.floor(leaseMs / 5)),
    };
    if (!transport.beatLease) {
      throw new UnsupportedFeature(
        `kq beat needs a broker-side lease, which the ${transport.name} transport does not provide. Use redis://, amqp://, postgresql:// or memory://, ` +
          `or pass one explicitly (the \`lease\` option).`,
      );
    }
    return transport.beatLease(options);
  }

  #onElected(leadership: BeatLeadership): void {
    this.#leadership = leadership;
    this.log.info(`Leader of schedule ${this.group} (epoch ${leadership.epoch})`);
    this.emit('elected', leadership.epoch);
    const previous = this.#leading ?? Promise.resolve();
    this.#leading = previous
      .catch(() => undefined)
      .then(() => this.#lead(leadership))
      .catch((error: unknown) => {
        const failure = error instanceof Error ? error : new KqError(String(error));
        this.log.error(`beat leader loop failed: ${failure.message}`);
        this.emit('error', failure);
      });
  }

  /** The leader's loop: send what is due, sleep until the next tick, until leadership ends. */
  async #lead(leadership: BeatLeadership): Promise<void> {
    const last = new Map(leadership.lastTicks);
    const { signal } = leadership;
    let announcedTicks = '';
    let announcedAt = 0;
    while (!signal.aborted && this.#running) {
      let wake = Date.now() + MAX_SLEEP_MS;
      for (const entry of this.entries) {
        if (signal.aborted || !this.#running) return;
        if (!entry.enabled) continue;
        try {
          wake = Math.min(wake, await this.#runEntry(entry, last, leadership));
        } catch (error) {
          if (error instanceof LeadershipEnded) return;
          const failure = error instanceof Error ? error : new KqError(String(error));
          this.log.error(`Could not send ${entry.name}: ${failure.message} (retrying)`);
          this.emit('error', failure);
          wake = Math.min(wake, Date.now() + RETRY_MS);
        }
      }
      const ticks = [...last].join();
      if (ticks !== announcedTicks || Date.now() - announcedAt >= ANNOUNCE_MS) {
        this.#announce(leadership, last);
        announcedTicks = ticks;
        announcedAt = Date.now();
      }
      await sleepUntil(wake, signal);
    }
  }

  /**
   * Tells monitors what the schedule is: a `beat-schedule` event on the event exchange (a kq event; Celery's
   * monitors ignore the group) with every entry's schedule, last and next run, from the leader, at least every
   * `ANNOUNCE_MS`. The dashboard shows it; nothing else depends on it.
   */
  #announce(leadership: BeatLeadership, last: ReadonlyMap<string, number>): void {
    const now = Date.now();
    const entries = this.entries.map((entry) => {
      const lastRun = last.get(entry.name);
      return {
        name: entry.name,
        task: entry.task,
        schedule: entry.describe(),
        enabled: entry.enabled,
        last_run: lastRun === undefined ? null : lastRun / 1000,
        next_run: entry.enabled ? entry.nextTick(Math.max(lastRun ?? now, now)) / 1000 : null,
      };
    });
    clientEventDispatcher(this.app).send('beat-schedule', { group: this.group, epoch: leadership.epoch, entries });
  }

  /** Sends what is due for one entry; resolves to when it is next due. */
  async #runEntry(entry: ScheduleEntry, last: Map<string, number>, leadership: BeatLeadership): Promise<number> {
    const now = Date.now();
    const recorded = last.get(entry.name);
    if (recorded === undefined) {
      // First time this schedule group sees the entry: start from now (nothing in the past is owed).
      const anchor = entry.previousTick(now) ?? now;
      await this.#commit(leadership, { entry: entry.name, tick: anchor }, last);
      return entry.nextTick(Math.max(anchor, now));
    }
    const plan = planTicks(entry, recorded, now, this.maxCatchUp);
    for (const tick of plan.send) {
      const id = beatTaskId(this.group, entry.name, tick);
      const prepared = prepareTaskMessage(this.app, entry.task, entry.args, { ...entry.options, kwargs: { ...entry.kwargs }, taskId: id });
      const declare: Entity[] = [];
      if (prepared.queue) declare.push(prepared.queue);
      else if (prepared.exchange.name !== '') declare.push(prepared.exchange);
      for (const entity of declare) await this.app.connection.maybeDeclare(entity);
      const outcome = await this.#commit(
        leadership,
        { entry: entry.name, tick, publish: { exchange: prepared.exchange.name, routingKey: prepared.routingKey, message: prepared.message } },
        last,
      );
      if (outcome === 'committed') {
        const late = Date.now() - tick;
        this.log.info(`Sent ${entry.task}[${id}] for ${entry.name} @ ${formatIsoDate(new Date(tick))}${late > 1000 ? ` (${(late / 1000).toFixed(1)}s late)` : ''}`);
        this.emit('sent', entry.name, new Date(tick), id);
      }
    }
    if (plan.record !== null && plan.record > (last.get(entry.name) ?? -Infinity)) {
      await this.#commit(leadership, { entry: entry.name, tick: plan.record }, last);
    }
    if (plan.dropped > 0 || plan.truncated) {
      const count = `${plan.dropped}${plan.truncated ? '+' : ''}`;
      this.log.warning(`${entry.name}: ${count} missed tick(s) not sent (misfire policy ${entry.misfire}${plan.truncated ? `, maxCatchUp ${this.maxCatchUp}` : ''})`);
      this.emit('skipped', entry.name, plan.dropped);
    }
    return entry.nextTick(Math.max(last.get(entry.name) ?? now, now));
  }

  async #commit(leadership: BeatLeadership, record: TickCommit, last: Map<string, number>): Promise<CommitOutcome> {
    const outcome = await leadership.commit(record);
    if (outcome === 'fenced') throw new LeadershipEnded();
    // `stale`: the broker already holds this tick or a later one; nothing was sent, and earlier ticks would be refused too.
    last.set(record.entry, Math.max(record.tick, last.get(record.entry) ?? -Infinity));
    return outcome;
  }
}

/** Thrown inside the leader loop when a commit was fenced off: another process leads now. */
class LeadershipEnded extends Error {}

function sleepUntil(when: number, signal: AbortSignal): Promise<void> {
  const ms = Math.max(0, when - Date.now());
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
