import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Option, type Command } from 'commander';
import type { App } from '../app/app';
import { Beat } from '../beat/beat';
import { BeatScheduleError } from '../beat/errors';
import type { BeatEntryDefinition } from '../beat/schedule-entry';
import { loadScheduleFile, parseSchedule, type BeatScheduleFile } from '../beat/schedule-file';
import { jsonLogSink } from '../log/log-json-sink';
import { Logger, type LogFormat, type LogLevel } from '../log/logger';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { parseLogLevelOption } from './log-options';
import { positiveInt } from './option-parsers';

export interface BeatCommandOptions {
  /** The app module (`-A`), whose `beatSchedule` export is read. */
  appModule?: string;
  /** A schedule file (JSON or YAML). */
  schedule?: string;
  group?: string;
  leaseMs?: number;
  loglevel?: LogLevel;
  logger?: Logger;
}

/**
 * The beat that `kq beat` runs and `kq worker -B` embeds: the app module's `beatSchedule` export and/or a schedule
 * file. Any number may run: one is leader at a time (see docs/periodic.md), so `-B` on every worker is safe.
 */
export async function createBeat(app: App, options: BeatCommandOptions): Promise<Beat> {
  const fromModule = options.appModule ? await moduleSchedule(options.appModule) : undefined;
  const fromFile = options.schedule ? await loadScheduleFile(options.schedule) : undefined;
  if (!fromModule && !fromFile) {
    throw new BeatScheduleError('kq beat has no schedule: export `beatSchedule` from the app module (-A) or pass --schedule beat.yaml.');
  }
  const entries: BeatEntryDefinition[] = [...(fromModule?.entries ?? []), ...(fromFile?.entries ?? [])];
  const defaults = { ...fromModule, ...fromFile };
  const group = options.group ?? defaults.group;
  return new Beat(app, {
    schedule: entries,
    ...(group ? { group } : {}),
    ...(defaults.timezone ? { timezone: defaults.timezone } : {}),
    ...(defaults.misfire ? { misfire: defaults.misfire } : {}),
    ...(defaults.misfireGrace !== undefined ? { misfireGrace: defaults.misfireGrace } : {}),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.loglevel ? { loglevel: options.loglevel } : {}),
  });
}

interface BeatFlags {
  logFormat?: LogFormat;
  schedule?: string;
  group?: string;
  leaseMs?: number;
  loglevel: LogLevel;
}

/** `kq beat`: sends the schedule until SIGTERM/SIGINT, giving up its lease at once on the way out. */
export function registerBeatCommand(program: Command): void {
  program
    .command('beat')
    .description('Send periodic tasks on schedule; run as many as you like, one leads at a time.')
    .option('-s, --schedule <file>', 'a schedule file (JSON or YAML), in addition to the app module\'s beatSchedule export')
    .option('--group <name>', 'beats with the same group elect one leader (default: the app name)')
    .option('--lease-ms <ms>', "the leader's lease, in milliseconds", positiveInt)
    .option('-l, --loglevel <level>', 'debug, info, warning, error or critical', parseLogLevelOption, 'info')
    .addOption(new Option('--log-format <format>', "text (Celery's lines) or json (one object per line)").choices(['text', 'json']))
    .action(async (flags: BeatFlags, command: Command) => {
      const global = globalOptions(command);
      const app = await loadApp(global);
      const beat = await createBeat(app, {
        ...(global.app ? { appModule: global.app } : {}),
        ...(flags.schedule ? { schedule: flags.schedule } : {}),
        ...(flags.group ? { group: flags.group } : {}),
        ...(flags.leaseMs ? { leaseMs: flags.leaseMs } : {}),
        loglevel: flags.loglevel,
        ...(flags.logFormat === 'json' ? { logger: new Logger('beat', { level: flags.loglevel, sink: jsonLogSink() }) } : {}),
      });
      beat.installSignalHandlers(() => {
        void app.close().finally(() => process.exit(0));
      });
      await beat.start();
    });
}

/** The app module's `beatSchedule` export: a list of entries, or `{ entries, timezone?, ... }` (or its JSON/YAML text). */
async function moduleSchedule(modulePath: string): Promise<BeatScheduleFile | undefined> {
  const module = (await import(pathToFileURL(resolve(modulePath)).href)) as Record<string, unknown>;
  const exported = module['beatSchedule'];
  if (exported === undefined) return undefined;
  if (typeof exported === 'string') return parseSchedule(exported, `${modulePath} beatSchedule`);
  return parseSchedule(JSON.stringify(exported), `${modulePath} beatSchedule`);
}
