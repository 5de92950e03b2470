import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { KqError } from '@kq/core';
import { Beat } from '../beat/beat';
import { BeatScheduleError } from '../beat/errors';
import type { BeatEntryDefinition } from '../beat/schedule-entry';
import { loadScheduleFile, parseSchedule, type BeatScheduleFile } from '../beat/schedule-file';
import { parseLogLevel } from '../logger';
import { loadApp } from './load-app';

export const BEAT_USAGE =
  'kq beat    -A <module> [-b url] [--schedule beat.yaml] [--group name] [--lease-ms ms] [--loglevel info]';

/**
 * `kq beat`: sends the schedule of the app module's `beatSchedule` export and/or a `--schedule` file (JSON or YAML).
 * Run as many as you like: one is leader at a time (see docs/periodic.md). Stops (giving up its lease at once) on
 * SIGTERM/SIGINT.
 */
export async function beatCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      app: { type: 'string', short: 'A' },
      broker: { type: 'string', short: 'b' },
      'result-backend': { type: 'string' },
      schedule: { type: 'string', short: 's' },
      group: { type: 'string' },
      'lease-ms': { type: 'string' },
      loglevel: { type: 'string', short: 'l' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(`Usage:\n  ${BEAT_USAGE}`);
    return 0;
  }
  const app = await loadApp({ app: values.app, broker: values.broker, resultBackend: values['result-backend'] });
  const fromModule = values.app ? await moduleSchedule(values.app) : undefined;
  const fromFile = values.schedule ? await loadScheduleFile(values.schedule) : undefined;
  if (!fromModule && !fromFile) {
    throw new BeatScheduleError('kq beat has no schedule: export `beatSchedule` from the app module (-A) or pass --schedule beat.yaml.');
  }
  const entries: BeatEntryDefinition[] = [...(fromModule?.entries ?? []), ...(fromFile?.entries ?? [])];
  const defaults = { ...fromModule, ...fromFile };
  const leaseMs = values['lease-ms'] === undefined ? undefined : Number(values['lease-ms']);
  if (leaseMs !== undefined && !(leaseMs > 0)) throw new KqError(`--lease-ms must be a positive number of milliseconds; got ${values['lease-ms']}.`);
  const beat = new Beat(app, {
    schedule: entries,
    ...(values.group ?? defaults.group ? { group: (values.group ?? defaults.group) as string } : {}),
    ...(defaults.timezone ? { timezone: defaults.timezone } : {}),
    ...(defaults.misfire ? { misfire: defaults.misfire } : {}),
    ...(defaults.misfireGrace !== undefined ? { misfireGrace: defaults.misfireGrace } : {}),
    ...(leaseMs ? { leaseMs } : {}),
    loglevel: parseLogLevel(values.loglevel),
  });
  beat.installSignalHandlers(() => {
    void app.close().finally(() => process.exit(0));
  });
  await beat.start();
  return -1; // keep running until a signal
}

/** The app module's `beatSchedule` export: a list of entries, or `{ entries, timezone?, ... }` (or its JSON/YAML text). */
async function moduleSchedule(modulePath: string): Promise<BeatScheduleFile | undefined> {
  const module = (await import(pathToFileURL(resolve(modulePath)).href)) as Record<string, unknown>;
  const exported = module['beatSchedule'];
  if (exported === undefined) return undefined;
  if (typeof exported === 'string') return parseSchedule(exported, `${modulePath} beatSchedule`);
  return parseSchedule(JSON.stringify(exported), `${modulePath} beatSchedule`);
}
