import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '@kq/test-harness';
import { App } from '../src/app/app';
import {
  Beat,
  BeatScheduleError,
  beatTaskId,
  parseSchedule,
  planTicks,
  ScheduleEntry,
  type BeatEntryDefinition,
  type BeatLease,
  type BeatLeaseListener,
  type CommitOutcome,
  type TickCommit,
} from '../src/beat/index';
import { decodeTaskMessage } from '../src/protocol/index';

const defaults = { timezone: 'UTC', misfire: 'run-once' as const, misfireGrace: 60 };
const entry = (definition: Partial<BeatEntryDefinition>): ScheduleEntry =>
  new ScheduleEntry({ name: 'e', task: 'proj.t', ...definition } as BeatEntryDefinition, defaults);
const at = (iso: string): number => Date.parse(iso);

describe('schedule entries', () => {
  it('an interval ticks on multiples of itself since the epoch', () => {
    const every = entry({ every: 10 });
    expect(every.nextTick(at('2024-01-01T00:00:05Z'))).toBe(at('2024-01-01T00:00:10Z'));
    expect(every.nextTick(at('2024-01-01T00:00:10Z'))).toBe(at('2024-01-01T00:00:20Z'));
    expect(every.previousTick(at('2024-01-01T00:00:10Z'))).toBe(at('2024-01-01T00:00:10Z'));
    expect(every.ticksBetween(at('2024-01-01T00:00:00Z'), at('2024-01-01T00:00:35Z'), 10)).toEqual({
      ticks: [at('2024-01-01T00:00:10Z'), at('2024-01-01T00:00:20Z'), at('2024-01-01T00:00:30Z')],
      more: false,
    });
    // Only the latest `max` are returned, and the caller is told there were more.
    expect(every.ticksBetween(at('2024-01-01T00:00:00Z'), at('2024-01-01T00:00:35Z'), 2)).toEqual({
      ticks: [at('2024-01-01T00:00:20Z'), at('2024-01-01T00:00:30Z')],
      more: true,
    });
    expect(entry({ every: 0.25 }).nextTick(1000)).toBe(1250);
  });

  it('a cron expression is read in its time zone, across a daylight-saving change', () => {
    const daily = entry({ cron: '0 7 * * *', timezone: 'Europe/Paris' });
    // Paris moves to summer time on 31 March 2024: 07:00 is 06:00Z before, 05:00Z after.
    expect(daily.ticksBetween(at('2024-03-29T00:00:00Z'), at('2024-04-01T00:00:00Z'), 10).ticks).toEqual([
      at('2024-03-29T06:00:00Z'),
      at('2024-03-30T06:00:00Z'),
      at('2024-03-31T05:00:00Z'),
    ]);
    expect(daily.nextTick(at('2024-03-31T05:00:00Z'))).toBe(at('2024-04-01T05:00:00Z'));
    expect(daily.previousTick(at('2024-03-31T05:00:00Z'))).toBe(at('2024-03-31T05:00:00Z'));
    // A local time that does not exist fires at the next one that does; one that occurs twice fires once.
    const halfPastTwo = entry({ cron: '30 2 * * *', timezone: 'Europe/Paris' });
    expect(halfPastTwo.ticksBetween(at('2024-03-29T12:00:00Z'), at('2024-04-01T12:00:00Z'), 10).ticks).toEqual([
      at('2024-03-30T01:30:00Z'),
      at('2024-03-31T01:30:00Z'),
      at('2024-04-01T00:30:00Z'),
    ]);
    expect(halfPastTwo.ticksBetween(at('2024-10-26T00:00:00Z'), at('2024-10-29T00:00:00Z'), 10).ticks).toEqual([
      at('2024-10-26T00:30:00Z'),
      at('2024-10-27T00:30:00Z'),
      at('2024-10-28T01:30:00Z'),
    ]);
    expect(halfPastTwo.ticksBetween(at('2024-10-26T00:00:00Z'), at('2024-10-29T00:00:00Z'), 2)).toEqual({
      ticks: [at('2024-10-27T00:30:00Z'), at('2024-10-28T01:30:00Z')],
      more: true,
    });
    const seconds = entry({ cron: '*/15 * * * * *' });
    expect(seconds.nextTick(at('2024-01-01T00:00:14.999Z'))).toBe(at('2024-01-01T00:00:15Z'));
    const long = seconds.ticksBetween(at('2024-01-01T00:00:00Z'), at('2024-01-02T00:00:00Z'), 3);
    expect(long).toEqual({ ticks: [at('2024-01-01T23:59:30Z'), at('2024-01-01T23:59:45Z'), at('2024-01-02T00:00:00Z')], more: true });
  });

  it('rejects entries that cannot work, saying why', () => {
    expect(() => entry({ cron: '* * * * *', every: 5 })).toThrow(/exactly one of `cron`/);
    expect(() => entry({})).toThrow(/exactly one of `cron`/);
    expect(() => entry({ every: 0 })).toThrow(/positive number of seconds/);
    expect(() => entry({ cron: 'every tuesday' })).toThrow(/cannot read the cron expression/);
    expect(() => entry({ every: 5, timezone: 'Mars/Olympus' })).toThrow(/unknown time zone/);
    expect(() => entry({ every: 5, misfire: 'sometimes' as never })).toThrow(/misfire/);
    expect(() => entry({ every: 5, task: '' })).toThrow(BeatScheduleError);
    const app = new App('beat-validate');
    expect(() => new Beat(app, { schedule: [{ name: 'a', task: 't', every: 1 }, { name: 'a', task: 't', every: 2 }] })).toThrow(/named "a"/);
  });
});

describe('misfire policies', () => {
  // Ticks every 10 s from 10 s to 100 s are due at 100 s; the grace is 15 s, so 90 s and 100 s are on time.
  const plan = (misfire: 'run-once' | 'skip' | 'catch-up', maxCatchUp = 1000) =>
    planTicks(new ScheduleEntry({ name: 'e', task: 't', every: 10, misfire, misfireGrace: 15 }, defaults), 0, 100_000, maxCatchUp);

  it('catch-up sends every missed tick, oldest first', () => {
    expect(plan('catch-up')).toEqual({ send: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((s) => s * 1000), record: 100_000, dropped: 0, truncated: false });
  });

  it('run-once sends one message for the misfired ticks, and the on-time ones', () => {
    expect(plan('run-once')).toEqual({ send: [80_000, 90_000, 100_000], record: 100_000, dropped: 7, truncated: false });
  });

  it('skip sends only the ticks within the grace', () => {
    expect(plan('skip')).toEqual({ send: [90_000, 100_000], record: 100_000, dropped: 8, truncated: false });
  });

  it('considers at most maxCatchUp ticks, the latest', () => {
    expect(plan('catch-up', 3)).toEqual({ send: [80_000, 90_000, 100_000], record: 100_000, dropped: 0, truncated: true });
  });

  it('nothing due, nothing to do', () => {
    expect(planTicks(entry({ every: 10 }), 100_000, 105_000, 10)).toEqual({ send: [], record: null, dropped: 0, truncated: false });
  });
});

describe('schedule files', () => {
  it('reads YAML with entries keyed by name, and defaults', () => {
    const schedule = parseSchedule(
      [
        'timezone: Europe/Paris',
        'misfire: catch-up',
        'entries:',
        '  report:',
        '    task: proj.report',
        '    cron: "0 7 * * 1-5"',
        '    kwargs: { format: pdf }',
        '    options: { queue: reports, priority: 5, expires: 3600 }',
        '  ping:',
        '    task: proj.ping',
        '    every: 30',
        '    args: [1, 2]',
      ].join('\n'),
    );
    expect(schedule.timezone).toBe('Europe/Paris');
    expect(schedule.misfire).toBe('catch-up');
    expect(schedule.entries).toEqual([
      { name: 'report', task: 'proj.report', cron: '0 7 * * 1-5', kwargs: { format: 'pdf' }, options: { queue: 'reports', priority: 5, expires: 3600 } },
      { name: 'ping', task: 'proj.ping', every: 30, args: [1, 2] },
    ]);
  });

  it('reads a JSON list of entries', () => {
    expect(parseSchedule('[{"name": "a", "task": "t", "every": 5}]').entries).toEqual([{ name: 'a', task: 't', every: 5 }]);
  });

  it('rejects what it cannot read', () => {
    expect(() => parseSchedule('entries: [')).toThrow(BeatScheduleError);
    expect(() => parseSchedule('{"entires": []}')).toThrow(/unknown top-level key "entires"/);
    expect(() => parseSchedule('entries: 5')).toThrow(/must be a list or an object/);
    expect(() => parseSchedule('"just a string"')).toThrow(/list of entries/);
  });
});

describe('deterministic task ids', () => {
  it('the same (group, entry, tick) always gives the same uuid; anything else another', () => {
    const id = beatTaskId('g', 'e', 1_700_000_000_000);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(beatTaskId('g', 'e', 1_700_000_000_000)).toBe(id);
    expect(beatTaskId('g', 'e', 1_700_000_001_000)).not.toBe(id);
    expect(beatTaskId('h', 'e', 1_700_000_000_000)).not.toBe(id);
  });
});

/** A lease that elects at once with the given state and records commits (the Beat's logic, without a broker). */
class RecordingLease implements BeatLease {
  readonly kind = 'test';
  readonly commits: TickCommit[] = [];
  readonly controller = new AbortController();
  fenceAfter = Infinity;

  constructor(
    readonly lastTicks: Map<string, number>,
    /** Publishes committed messages (as a broker-side lease would, atomically with the record). */
    readonly publish: (record: TickCommit) => Promise<void> = async () => undefined,
  ) {}

  async start(listener: BeatLeaseListener): Promise<void> {
    listener.elected({
      epoch: 7,
      lastTicks: this.lastTicks,
      signal: this.controller.signal,
      commit: async (record): Promise<CommitOutcome> => {
        if (this.commits.length >= this.fenceAfter) {
          this.controller.abort();
          return 'fenced';
        }
        const last = this.lastTicks.get(record.entry);
        if (last !== undefined && record.tick <= last) return 'stale';
        await this.publish(record);
        this.lastTicks.set(record.entry, record.tick);
        this.commits.push(record);
        return 'committed';
      },
    });
  }

  async stop(): Promise<void> {
    this.controller.abort();
  }
}

describe('Beat', () => {
  it('sends Celery task messages with the entry options, and catches up every missed tick after a gap', async () => {
    const now = Date.now();
    const last = Math.floor(now / 1000) * 1000 - 5000; // five ticks ago
    const app = new App('beat-test', { broker: `memory://beat-${randomUUID()}` });
    const lease = new RecordingLease(new Map([['ping', last]]), async ({ publish }) => {
      if (publish) await (await app.connection.channel()).publish(publish.exchange, publish.routingKey, publish.message);
    });
    const beat = new Beat(app, {
      schedule: [{ name: 'ping', task: 'proj.ping', args: [1], kwargs: { a: 2 }, every: 1, misfire: 'catch-up', options: { queue: 'beat-q', priority: 3, expires: 60 } }],
      group: 'g1',
      lease,
      loglevel: 'critical',
    });
    await beat.start();
    await waitFor(() => lease.commits.length >= 6, 5000, 'six commits');
    await beat.stop();
    const ticks = lease.commits.map((commit) => commit.tick);
    ticks.forEach((tick, index) => expect(tick).toBe(last + (index + 1) * 1000));
    const first = lease.commits[0]!.publish!;
    expect(first.exchange).toBe('');
    expect(first.routingKey).toBe('beat-q');
    expect(first.message.properties.priority).toBe(3);
    expect(first.message.properties.expiration).toBe('60000');
    const channel = await app.connection.channel();
    const delivery = await channel.get('beat-q', { noAck: true });
    const message = decodeTaskMessage(delivery!);
    expect(message).toMatchObject({ name: 'proj.ping', id: beatTaskId('g1', 'ping', last + 1000), args: [1], kwargs: { a: 2 } });
    expect(message.expires).not.toBeNull();
    await app.close();
  });

  it('a new entry starts from now: nothing in the past is sent', async () => {
    const lease = new RecordingLease(new Map());
    const app = new App('beat-test', { broker: `memory://beat-${randomUUID()}` });
    const beat = new Beat(app, { schedule: [{ name: 'fresh', task: 'proj.fresh', every: 3600 }], lease, loglevel: 'critical' });
    const before = Date.now();
    await beat.start();
    await waitFor(() => lease.lastTicks.has('fresh'), 5000, 'the anchor to be recorded');
    await beat.stop();
    expect(lease.commits).toHaveLength(1);
    expect(lease.commits[0]!.publish).toBeUndefined();
    expect(lease.commits[0]!.tick).toBeLessThanOrEqual(before + 1000);
    await app.close();
  });

  it('stops sending as soon as a commit is fenced off', async () => {
    const now = Date.now();
    const lease = new RecordingLease(new Map([['ping', Math.floor(now / 1000) * 1000 - 10_000]]));
    lease.fenceAfter = 2;
    const app = new App('beat-test', { broker: `memory://beat-${randomUUID()}` });
    const beat = new Beat(app, { schedule: [{ name: 'ping', task: 'proj.ping', every: 1, misfire: 'catch-up' }], lease, loglevel: 'critical' });
    await beat.start();
    await waitFor(() => lease.controller.signal.aborted, 5000, 'the fence');
    expect(lease.commits).toHaveLength(2);
    expect(beat.isLeader).toBe(false);
    await beat.stop();
    await app.close();
  });

  it('two beats on one memory broker: one leads; when it stops the other resumes after its last tick', async () => {
    const broker = `memory://beat-${randomUUID()}`;
    const schedule: BeatEntryDefinition[] = [{ name: 'fast', task: 'proj.fast', every: 0.1, options: { queue: 'fast-q' } }];
    const apps = [new App('beat-a', { broker }), new App('beat-b', { broker })];
    const beats = apps.map((app) => new Beat(app, { schedule, group: 'shared', loglevel: 'critical' }));
    const sent: Array<{ by: number; tick: number }> = [];
    beats.forEach((beat, by) => beat.on('sent', (_entry, tick) => sent.push({ by, tick: tick.getTime() })));
    await Promise.all(beats.map((beat) => beat.start()));
    expect(beats.filter((beat) => beat.isLeader)).toHaveLength(1);
    const leader = beats[0]!.isLeader ? 0 : 1;
    await waitFor(() => sent.length >= 3, 5000, 'three ticks');
    await beats[leader]!.stop();
    await waitFor(() => sent.filter((s) => s.by !== leader).length >= 3, 5000, 'three ticks from the other beat');
    await beats[1 - leader]!.stop();
    const ticks = sent.map((s) => s.tick);
    ticks.slice(1).forEach((tick, index) => expect(tick).toBe(ticks[index]! + 100));
    await Promise.all(apps.map((app) => app.close()));
  });
});
