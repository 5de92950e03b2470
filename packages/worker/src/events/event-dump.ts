import { BoundedMap } from '@kq/core';
import type { ReceivedEvent } from './event';
import { pythonStr } from './python-str';

const HUMAN_TYPES: Readonly<Record<string, string>> = {
  'worker-offline': 'shutdown',
  'worker-online': 'started',
  'worker-heartbeat': 'heartbeat',
};

/** How many task descriptions are remembered for later events of the same task (Celery: 0xFFF). */
const TASK_NAMES_LIMIT = 0xfff;

/**
 * Celery's `celery events --dump` line format (`celery/events/dumper.py`), one line per event:
 * `<hostname> [<UTC time>] <human type>: <task> <key=value, … sorted>`, e.g.
 * `w1@host [2026-11-21 13:11:41.485325] task received: proj.add(<uuid>) args=(2, 2) kwargs={} clock=2, …`.
 */
export class EventDumper {
  readonly #taskNames = new BoundedMap<string, string>(TASK_NAMES_LIMIT);

  /** The line for one received event. */
  format(event: ReceivedEvent): string {
    const fields: Record<string, unknown> = { ...event };
    const timestamp = formatUtc(Number(fields['timestamp']));
    const type = String(fields['type']).toLowerCase();
    const hostname = String(fields['hostname']);
    delete fields['timestamp'];
    delete fields['type'];
    delete fields['hostname'];
    if (type.startsWith('task-')) {
      const uuid = String(fields['uuid']);
      delete fields['uuid'];
      let task: string;
      if (type === 'task-received' || type === 'task-sent') {
        task = `${pythonStr(fields['name'])}(${uuid}) args=${pythonStr(fields['args'])} kwargs=${pythonStr(fields['kwargs'])}`;
        delete fields['name'];
        delete fields['args'];
        delete fields['kwargs'];
        this.#remember(uuid, task);
      } else {
        task = this.#taskNames.get(uuid) ?? '';
      }
      const rest = sortedFields(fields);
      return `${hostname} [${timestamp}] ${humanizeType(type)}${rest ? ':' : ''} ${task} ${rest}`;
    }
    const rest = sortedFields(fields);
    return `${hostname} [${timestamp}] ${humanizeType(type)}${rest ? ':' : ''} ${rest}`;
  }

  #remember(uuid: string, task: string): void {
    this.#taskNames.delete(uuid);
    this.#taskNames.set(uuid, task);
  }
}

/** `worker-heartbeat` → `heartbeat`, `task-succeeded` → `task succeeded`. */
export function humanizeType(type: string): string {
  return HUMAN_TYPES[type.toLowerCase()] ?? type.toLowerCase().replace(/-/g, ' ');
}

/** Python's `str(datetime.utcfromtimestamp(ts))`: `2026-11-21 13:11:41.485325` (no fraction when it is zero). */
export function formatUtc(seconds: number): string {
  if (!Number.isFinite(seconds)) return String(seconds);
  const micros = Math.round(seconds * 1e6);
  const date = new Date(Math.floor(micros / 1000));
  const base = date.toISOString().slice(0, 19).replace('T', ' ');
  const fraction = ((micros % 1e6) + 1e6) % 1e6;
  return fraction === 0 ? base : `${base}.${String(fraction).padStart(6, '0')}`;
}

function sortedFields(fields: Record<string, unknown>): string {
  return Object.keys(fields)
    .sort()
    .map((key) => `${key}=${pythonStr(fields[key])}`)
    .join(', ');
}
