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
  /** The uuid of the task row to mark as selected (interactive mode); with it, rows get a two-column marker. */
  selected?: string;
  /** The key help for the status line (default: how to quit). */
  keys?: string;
  /** Told which task rows were drawn, newest first (what an interactive selection moves over). */
  onTasks?: (tasks: readonly ClusterTask[]) => void;
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
  lines.push(cut(`workers: ${online} online / ${workers.length} seen   tasks: ${state.tasks.size}   events: ${state.eventCount}   (${options.keys ?? 'Ctrl+C to quit'})`, width));
  lines.push('');
  lines.push(cut(row(['WORKER', 'STATUS', 'ACTIVE', 'PROCESSED', 'LOAD', 'CLOCK'], WORKER_COLUMNS), width));
  if (workers.length === 0) lines.push('  (no workers seen yet)');
  for (const worker of workers) lines.push(cut(row(workerCells(worker, now), WORKER_COLUMNS), width));
  lines.push('');
  const marker = (task: ClusterTask | undefined): string => (options.selected === undefined ? '' : task?.uuid === options.selected ? '> ' : '  ');
  lines.push(cut(marker(undefined) + row(['UUID', 'TASK', 'WORKER', 'TIME', 'STATE'], TASK_COLUMNS), width));
  const room = options.height === undefined ? Infinity : Math.max(1, options.height - lines.length - 1);
  const tasks = state.tasksByTime(room);
  options.onTasks?.(tasks);
  if (tasks.length === 0) lines.push('  (no tasks seen yet)');
  for (const task of tasks) lines.push(cut(marker(task) + row(taskCells(task), TASK_COLUMNS), width));
  return lines;
}

/** The fields a task page shows, in this order, when its events carried them. */
const DETAIL_FIELDS = ['args', 'kwargs', 'result', 'exception', 'retries', 'runtime', 'eta', 'expires', 'root_id', 'parent_id', 'routing_key', 'exchange'];

/**
 * One task as `kq events` shows it when selected (celery events' task view): name, state and worker, the fields its
 * events carried (args, kwargs, result or exception...), its traceback, and the timeline of its events.
 */
export function renderTaskDetail(task: ClusterTask, options: { width?: number; keys?: string } = {}): string[] {
  const width = options.width === undefined ? Infinity : Math.max(40, options.width);
  const lines = [cut(`Task ${task.uuid}   (${options.keys ?? 'Esc to go back'})`, width), ''];
  lines.push(cut(`  name      ${task.name ?? '?'}`, width));
  lines.push(cut(`  state     ${task.state}`, width));
  lines.push(cut(`  worker    ${task.worker ?? '-'}`, width));
  if (task.client) lines.push(cut(`  client    ${task.client}`, width));
  for (const field of DETAIL_FIELDS) {
    const value = task.fields[field];
    if (value === undefined || value === null || value === '') continue;
    lines.push(cut(`  ${field.padEnd(9)} ${typeof value === 'string' ? value : JSON.stringify(value)}`, width));
  }
  const traceback = task.fields['traceback'];
  if (typeof traceback === 'string' && traceback) {
    lines.push('', '  traceback:');
    for (const line of traceback.trimEnd().split('\n')) lines.push(cut(`    ${line}`, width));
  }
  lines.push('', '  events:');
  const timeline = Object.entries(task.times).sort(([, a], [, b]) => a - b);
  for (const [subject, at] of timeline) lines.push(cut(`    ${new Date(at * 1000).toISOString().replace('T', ' ').slice(0, 23)}  ${subject}`, width));
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
