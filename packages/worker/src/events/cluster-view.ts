import type { ClusterState, ClusterTask, ClusterWorker } from './cluster-state';

export interface ClusterViewOptions {
  /** Columns available; lines are cut to fit (default: not cut). */
  width?: number;
  /** Rows available; the task list is cut to fit (default: no limit). */
  height?: number;
  /** Title line (e.g. the broker). */
  title?: string;
  /** Current time, seconds (for liveness). */
  now?: number;
}

/**
 * Renders a `ClusterState` as the text screen `kq events` shows (like `celery events`' curses monitor): a header, the
 * workers (status by the heartbeat rule, active, processed, load, clock) and the most recent tasks (uuid, name,
 * worker, time, state). Plain text; the caller decides how to draw it.
 */
export function renderClusterView(state: ClusterState, options: ClusterViewOptions = {}): string[] {
  const width = options.width === undefined ? Infinity : Math.max(40, options.width);
  const now = options.now ?? Date.now() / 1000;
  const workers = [...state.workers.values()].sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  const online = workers.filter((worker) => worker.isAlive(now)).length;
  const lines: string[] = [];
  lines.push(cut(`${options.title ?? 'kq events'}`, width));
  lines.push(cut(`workers: ${online} online / ${workers.length} seen   tasks: ${state.tasks.size}   events: ${state.eventCount}   (Ctrl+C to quit)`, width));
  lines.push('');
  lines.push(cut(row(['WORKER', 'STATUS', 'ACTIVE', 'PROCESSED', 'LOAD', 'CLOCK'], WORKER_COLUMNS), width));
  if (workers.length === 0) lines.push('  (no workers seen yet)');
  for (const worker of workers) lines.push(cut(row(workerCells(worker, now), WORKER_COLUMNS), width));
  lines.push('');
  lines.push(cut(row(['UUID', 'TASK', 'WORKER', 'TIME', 'STATE'], TASK_COLUMNS), width));
  const room = options.height === undefined ? Infinity : Math.max(1, options.height - lines.length - 1);
  const tasks = state.tasksByTime(room);
  if (tasks.length === 0) lines.push('  (no tasks seen yet)');
  for (const task of tasks) lines.push(cut(row(taskCells(task), TASK_COLUMNS), width));
  return lines;
}

const WORKER_COLUMNS = [28, 8, 7, 10, 20, 8];
const TASK_COLUMNS = [37, 26, 20, 9, 9];

function workerCells(worker: ClusterWorker, now: number): string[] {
  return [
    worker.hostname,
    worker.isAlive(now) ? 'ONLINE' : 'OFFLINE',
    worker.active === null ? '-' : String(worker.active),
    worker.processed === null ? '-' : String(worker.processed),
    worker.loadavg ? worker.loadavg.map((n) => n.toFixed(2)).join(' ') : '-',
    String(worker.clock),
  ];
}

function taskCells(task: ClusterTask): string[] {
  const timestamp = task.timestamp;
  return [task.uuid, task.name ?? '?', task.worker ?? task.client ?? '-', timestamp === null ? '-' : clockTime(timestamp), task.state];
}

function clockTime(seconds: number): string {
  return new Date(seconds * 1000).toTimeString().slice(0, 8);
}

function row(cells: readonly string[], widths: readonly number[]): string {
  return cells.map((cell, i) => (i === cells.length - 1 ? cell : pad(cell, widths[i] ?? 10))).join(' ');
}

function pad(text: string, size: number): string {
  return text.length >= size ? `${text.slice(0, size - 1)}…` : text.padEnd(size);
}

function cut(text: string, width: number): string {
  return text.length > width ? text.slice(0, width) : text;
}
