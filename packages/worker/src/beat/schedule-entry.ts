import type { CronExpression, CronExpressionParser } from 'cron-parser';
import { lazyRequire } from '../platform/lazy-require';
import { assertTimeZone } from '../protocol/index';
import type { ApplyOptions } from '../task/task';
import { BeatScheduleError } from './errors';

/**
 * What a leader does with ticks that are more than `misfireGrace` late (beat was down, or no leader for a while):
 * - `run-once`: send one message for all of them (the latest), like Celery beat after a restart;
 * - `skip`: send none; record them as handled and wait for the next tick;
 * - `catch-up`: send every one of them, oldest first (at most `maxCatchUp`).
 * Ticks late by less than the grace are always sent, whatever the policy: a failover is not a misfire.
 */
/** cron-parser, loaded with the first cron entry (see lazy-require.ts). */
const loadCronParser = lazyRequire<{ CronExpressionParser: typeof CronExpressionParser }>('cron-parser');

export type MisfirePolicy = 'run-once' | 'skip' | 'catch-up';

export const MISFIRE_POLICIES: readonly MisfirePolicy[] = ['run-once', 'skip', 'catch-up'];

/** Options of the messages an entry sends (a subset of `applyAsync`'s; `expires` counts from the send). */
export type BeatTaskOptions = Pick<
  ApplyOptions,
  | 'queue'
  | 'exchange'
  | 'routingKey'
  | 'priority'
  | 'expires'
  | 'timeLimit'
  | 'softTimeLimit'
  | 'headers'
  | 'ignoreResult'
  | 'shadow'
  | 'serializer'
  | 'compression'
>;

/** One schedule entry as written in code or in a schedule file. Exactly one of `cron` and `every`. */
export interface BeatEntryDefinition {
  /** Unique within the schedule; the broker-side state and the task ids are keyed by it. */
  name: string;
  /** Task name (it need not be registered in this process: Python workers run it too). */
  task: string;
  args?: readonly unknown[];
  kwargs?: Record<string, unknown>;
  options?: BeatTaskOptions;
  /** A cron expression: 5 fields (minute precision) or 6 (seconds first), or a macro such as `@hourly`. */
  cron?: string;
  /** An interval in seconds; ticks fall on multiples of it since the Unix epoch, so every leader computes the same ones. */
  every?: number;
  /** IANA time zone the cron expression is read in (default: the schedule's, else the app's `timezone`). */
  timezone?: string;
  misfire?: MisfirePolicy;
  /** Seconds a tick may be late and still count as on time (default: the schedule's, else 60). */
  misfireGrace?: number;
  /** False keeps the entry in the file but never sends it. Default true. */
  enabled?: boolean;
}

export interface EntryDefaults {
  timezone: string;
  misfire: MisfirePolicy;
  misfireGrace: number;
}

/** Ticks of an entry in a window: the latest `max` of them (ascending) and whether older ones were left out. */
export interface TickWindow {
  ticks: number[];
  more: boolean;
}

/** Extra cron ticks walked back when looking for the start of a window (see ticksBetween). */
const DST_MARGIN = 4;

/** A validated schedule entry that knows its tick times (epoch milliseconds). */
export class ScheduleEntry {
  readonly name: string;
  readonly task: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly options: Readonly<BeatTaskOptions>;
  readonly cron: string | null;
  readonly everyMs: number | null;
  readonly timezone: string;
  readonly misfire: MisfirePolicy;
  readonly misfireGraceMs: number;
  readonly enabled: boolean;

  constructor(definition: BeatEntryDefinition, defaults: EntryDefaults) {
    const where = `Schedule entry ${JSON.stringify(definition?.name ?? '?')}`;
    if (typeof definition !== 'object' || definition === null) throw new BeatScheduleError('A schedule entry must be an object.');
    if (typeof definition.name !== 'string' || definition.name.trim() === '') throw new BeatScheduleError('Every schedule entry needs a non-empty `name`.');
    if (typeof definition.task !== 'string' || definition.task === '') throw new BeatScheduleError(`${where} needs a \`task\` (the task name to send).`);
    if (definition.args !== undefined && !Array.isArray(definition.args)) throw new BeatScheduleError(`${where}: \`args\` must be a list.`);
    if (definition.kwargs !== undefined && !isRecord(definition.kwargs)) throw new BeatScheduleError(`${where}: \`kwargs\` must be an object.`);
    if (definition.options !== undefined && !isRecord(definition.options)) throw new BeatScheduleError(`${where}: \`options\` must be an object.`);
    const hasCron = definition.cron !== undefined;
    const hasEvery = definition.every !== undefined;
    if (hasCron === hasEvery) throw new BeatScheduleError(`${where} needs exactly one of \`cron\` (an expression) and \`every\` (seconds).`);
    this.name = definition.name;
    this.task = definition.task;
    this.args = [...(definition.args ?? [])];
    this.kwargs = { ...(definition.kwargs ?? {}) };
    this.options = { ...(definition.options ?? {}) };
    this.timezone = definition.timezone ?? defaults.timezone;
    try {
      assertTimeZone(this.timezone);
    } catch (error) {
      throw new BeatScheduleError(`${where}: unknown time zone ${JSON.stringify(this.timezone)} (use an IANA name such as "Europe/Paris").`, { cause: error });
    }
    this.misfire = definition.misfire ?? defaults.misfire;
    if (!MISFIRE_POLICIES.includes(this.misfire)) {
      throw new BeatScheduleError(`${where}: \`misfire\` must be one of ${MISFIRE_POLICIES.join(', ')}; got ${JSON.stringify(this.misfire)}.`);
    }
    const grace = definition.misfireGrace ?? defaults.misfireGrace;
    if (typeof grace !== 'number' || !Number.isFinite(grace) || grace < 0) throw new BeatScheduleError(`${where}: \`misfireGrace\` must be a number of seconds ≥ 0.`);
    this.misfireGraceMs = grace * 1000;
    this.enabled = definition.enabled ?? true;
    if (hasEvery) {
      const every = definition.every;
      if (typeof every !== 'number' || !Number.isFinite(every) || every <= 0) {
        throw new BeatScheduleError(`${where}: \`every\` must be a positive number of seconds; got ${JSON.stringify(every)}.`);
      }
      this.everyMs = Math.max(1, Math.round(every * 1000));
      this.cron = null;
    } else {
      if (typeof definition.cron !== 'string' || definition.cron.trim() === '') throw new BeatScheduleError(`${where}: \`cron\` must be a cron expression string.`);
      this.cron = definition.cron.trim();
      this.everyMs = null;
      try {
        this.#cronFrom(Date.now()).next();
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new BeatScheduleError(`${where}: cannot read the cron expression ${JSON.stringify(this.cron)} (${reason}).`, { cause: error });
      }
    }
  }

  /** What the schedule says, for logs: `every 30s` or `cron "0 * * * *" (Europe/Paris)`. */
  describe(): string {
    return this.everyMs !== null ? `every ${this.everyMs / 1000}s` : `cron ${JSON.stringify(this.cron)} (${this.timezone})`;
  }

  /** The first tick strictly after `afterMs`. */
  nextTick(afterMs: number): number {
    if (this.everyMs !== null) return (Math.floor(afterMs / this.everyMs) + 1) * this.everyMs;
    return this.#cronFrom(afterMs).next().getTime();
  }

  /** The last tick at or before `atMs`, or null when there is none. */
  previousTick(atMs: number): number | null {
    if (this.everyMs !== null) return Math.floor(atMs / this.everyMs) * this.everyMs;
    const cron = this.#cronFrom(atMs + 1);
    return cron.hasPrev() ? cron.prev().getTime() : null;
  }

  /** The ticks t with `afterMs < t ≤ untilMs`: the latest `max` of them, ascending, and whether there were more. */
  ticksBetween(afterMs: number, untilMs: number, max: number): TickWindow {
    if (untilMs <= afterMs || max <= 0) return { ticks: [], more: false };
    if (this.everyMs !== null) {
      const first = Math.floor(afterMs / this.everyMs) + 1;
      const last = Math.floor(untilMs / this.everyMs);
      if (last < first) return { ticks: [], more: false };
      const from = Math.max(first, last - max + 1);
      const ticks: number[] = [];
      for (let k = from; k <= last; k++) ticks.push(k * this.everyMs);
      return { ticks, more: from > first };
    }
    // Walk back a little more than `max` ticks to find where to start, so a long outage costs about `max` steps, not
    // one per missed tick; then walk forward, because cron-parser's next() and prev() disagree around daylight-saving
    // changes (prev() skips a time that does not exist and yields one that occurs twice twice) and next() is what
    // the schedule means (and what nextTick() uses). The margin absorbs those disagreements.
    let from = afterMs;
    let more = false;
    const back = this.#cronFrom(untilMs + 1);
    for (let count = 0; back.hasPrev(); ) {
      const tick = back.prev().getTime();
      if (tick <= afterMs) break;
      if (++count > max + DST_MARGIN) {
        from = tick;
        more = true;
        break;
      }
    }
    const forward = this.#cronFrom(from);
    const ticks: number[] = [];
    while (forward.hasNext()) {
      const tick = forward.next().getTime();
      if (tick > untilMs) break;
      if (tick > afterMs) ticks.push(tick);
    }
    return { ticks: ticks.slice(-max), more: more || ticks.length > max };
  }

  #cronFrom(ms: number): CronExpression {
    return loadCronParser().CronExpressionParser.parse(this.cron as string, { currentDate: new Date(ms), tz: this.timezone });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
