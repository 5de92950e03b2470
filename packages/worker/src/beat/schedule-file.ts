import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type * as Yaml from 'yaml';
import { lazyRequire } from '../platform/lazy-require';
import { BeatScheduleError } from './errors';
import type { BeatEntryDefinition, MisfirePolicy } from './schedule-entry';

/** A schedule as read from a file: the entries plus optional defaults for them. */
export interface BeatScheduleFile {
  entries: BeatEntryDefinition[];
  group?: string;
  timezone?: string;
  misfire?: MisfirePolicy;
  misfireGrace?: number;
}

/** yaml, loaded with the first schedule parsed (see lazy-require.ts). */
const loadYaml = lazyRequire<typeof Yaml>('yaml');

const TOP_LEVEL_KEYS = new Set(['entries', 'group', 'timezone', 'misfire', 'misfireGrace']);

/**
 * Reads a schedule from JSON or YAML text (YAML is a superset of JSON, so both parse). Accepted shapes:
 *
 *   - [ {name, task, cron|every, ...}, ... ]
 *   - { timezone?, misfire?, misfireGrace?, group?, entries: [ ... ] }
 *   - { ..., entries: { <name>: {task, cron|every, ...}, ... } }   (names from the keys, like Celery's beat_schedule)
 *
 * Entry fields are validated when the Beat is made; this only checks the shape.
 */
export function parseSchedule(text: string, source = 'schedule'): BeatScheduleFile {
  let data: unknown;
  try {
    data = loadYaml().parse(text);
  } catch (error) {
    throw new BeatScheduleError(`${source} is not valid JSON or YAML: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (Array.isArray(data)) return { entries: entriesFrom(data, source) };
  if (!isRecord(data)) throw new BeatScheduleError(`${source} must hold a list of entries or an object with \`entries\`.`);
  for (const key of Object.keys(data)) {
    if (!TOP_LEVEL_KEYS.has(key)) throw new BeatScheduleError(`${source}: unknown top-level key ${JSON.stringify(key)} (expected ${[...TOP_LEVEL_KEYS].join(', ')}).`);
  }
  if (data['entries'] === undefined) throw new BeatScheduleError(`${source} has no \`entries\`.`);
  const schedule: BeatScheduleFile = { entries: entriesFrom(data['entries'], source) };
  if (data['group'] !== undefined) schedule.group = stringField(data['group'], 'group', source);
  if (data['timezone'] !== undefined) schedule.timezone = stringField(data['timezone'], 'timezone', source);
  if (data['misfire'] !== undefined) schedule.misfire = stringField(data['misfire'], 'misfire', source) as MisfirePolicy;
  if (data['misfireGrace'] !== undefined) {
    const grace = data['misfireGrace'];
    if (typeof grace !== 'number') throw new BeatScheduleError(`${source}: \`misfireGrace\` must be a number of seconds.`);
    schedule.misfireGrace = grace;
  }
  return schedule;
}

/** Reads a schedule file (`.json`, `.yaml`, `.yml`). */
export async function loadScheduleFile(path: string): Promise<BeatScheduleFile> {
  const extension = extname(path).toLowerCase();
  if (!['.json', '.yaml', '.yml'].includes(extension)) throw new BeatScheduleError(`${path}: a schedule file must be .json, .yaml or .yml.`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BeatScheduleError(`Cannot read the schedule file ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return parseSchedule(text, path);
}

function entriesFrom(value: unknown, source: string): BeatEntryDefinition[] {
  if (Array.isArray(value)) {
    return value.map((entry, index) => {
      if (!isRecord(entry)) throw new BeatScheduleError(`${source}: entry #${index + 1} must be an object.`);
      return entry as unknown as BeatEntryDefinition;
    });
  }
  if (isRecord(value)) {
    return Object.entries(value).map(([name, entry]) => {
      if (!isRecord(entry)) throw new BeatScheduleError(`${source}: entry ${JSON.stringify(name)} must be an object.`);
      if (entry['name'] !== undefined && entry['name'] !== name) {
        throw new BeatScheduleError(`${source}: entry ${JSON.stringify(name)} has a different \`name\` (${JSON.stringify(entry['name'])}).`);
      }
      return { ...entry, name } as unknown as BeatEntryDefinition;
    });
  }
  throw new BeatScheduleError(`${source}: \`entries\` must be a list or an object keyed by entry name.`);
}

function stringField(value: unknown, name: string, source: string): string {
  if (typeof value !== 'string') throw new BeatScheduleError(`${source}: \`${name}\` must be a string.`);
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
