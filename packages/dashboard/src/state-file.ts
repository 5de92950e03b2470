import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ReceivedEvent } from '@kq/worker';
import type { FleetState } from './fleet-state';

interface StateFile {
  version: 1;
  /** Every kept task's events, then each worker's last known fields as one heartbeat: replayed in this order. */
  events: ReceivedEvent[];
}

/**
 * Flower's `--persistent`: the dashboard's picture of the fleet written to a file (on close and every minute) and
 * read back at start, so a restart does not forget the tasks it saw. What is saved are the events themselves, replayed
 * through the same state on load: the file is as bounded as the state (`maxTasks`).
 */
export async function saveFleetState(state: FleetState, path: string): Promise<void> {
  const events: ReceivedEvent[] = [];
  for (const task of state.cluster.tasks.values()) events.push(...task.events);
  for (const worker of state.cluster.workers.values()) {
    const last = worker.heartbeats.at(-1);
    if (last === undefined) continue;
    events.push({ ...worker.fields, type: 'worker-heartbeat', hostname: worker.hostname, timestamp: last, local_received: last } as ReceivedEvent);
  }
  const file: StateFile = { version: 1, events };
  await mkdir(dirname(path), { recursive: true });
  // Written aside and renamed over: a crash mid-write leaves the previous file whole.
  await writeFile(`${path}.tmp`, JSON.stringify(file));
  await rename(`${path}.tmp`, path);
}

/** Replays a saved file into `state`; resolves to how many events it held (0 when there is no file). */
export async function loadFleetState(state: FleetState, path: string): Promise<number> {
  if (!existsSync(path)) return 0;
  const file = JSON.parse(await readFile(path, 'utf8')) as Partial<StateFile>;
  if (file.version !== 1 || !Array.isArray(file.events)) throw new Error(`${path} is not a kq dashboard state file (version 1).`);
  for (const event of file.events) state.event(event);
  return file.events.length;
}
