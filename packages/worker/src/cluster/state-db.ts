import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KqError, type LamportClock, type LimitedSet, type LimitedSetWire } from '@kq/core';
import type { Logger } from '../log/logger';
import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterContext } from './cluster-context';

/** Format marker and version of kq's state file. */
const FORMAT = 'kq-statedb';
const VERSION = 1;

/**
 * The state file (Celery's `--statedb`, which Python keeps in a `shelve` database): the revoked set in its wire
 * form and the app clock. Revoked timestamps are monotonic seconds, which restart from zero when the host reboots,
 * so the file also records the monotonic and wall-clock time of the save; loading rebases every timestamp by the wall
 * time that passed, keeping each entry's age (and so its expiry) right across reboots.
 */
export interface StateFile {
  format: typeof FORMAT;
  version: number;
  clock: number;
  /** Monotonic seconds (the revoked set's clock) when saved. */
  monotonic: number;
  /** Seconds since the epoch when saved. */
  wallclock: number;
  revoked: LimitedSetWire;
}

const monotonicSeconds = (): number => Number(process.hrtime.bigint()) / 1e9;

/** Reads and writes one state file; writes are atomic (temporary file, fsync, rename) and never overlap. */
export class StateDb {
  readonly path: string;
  #writing: Promise<void> = Promise.resolve();

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Merges the saved state: the clock is adjusted to the saved value and the revoked ids are added (rebased, then
   * expired ones purged). A missing file is a first start. An unreadable one is moved aside (`<path>.corrupt-<ms>`),
   * reported, and the worker starts without it — a damaged file must not keep a worker down.
   */
  async load(target: { clock: LamportClock; revoked: LimitedSet<string> }, log?: Logger): Promise<StateFile | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new KqError(`Cannot read the state file ${this.path}: ${(error as Error).message}`, { cause: error });
    }
    let state: StateFile;
    try {
      state = parseStateFile(text);
    } catch (error) {
      const aside = `${this.path}.corrupt-${Date.now()}`;
      await rename(this.path, aside).catch(() => undefined);
      log?.error(`statedb: ${(error as Error).message}; moved it to ${aside} and starting without it`);
      return undefined;
    }
    target.clock.adjust(state.clock);
    const shift = monotonicSeconds() - state.monotonic - (Date.now() / 1000 - state.wallclock);
    const rebased: LimitedSetWire = {};
    for (const [id, [timestamp]] of Object.entries(state.revoked)) {
      Object.defineProperty(rebased, id, { value: [timestamp + shift, id], enumerable: true, writable: true, configurable: true });
    }
    target.revoked.update(rebased);
    target.revoked.purge();
    return state;
  }

  /** Writes the state (forwarding the clock, as Celery saves `clock.forward()`). Concurrent saves run one by one. */
  save(source: { clock: LamportClock; revoked: LimitedSet<string> }): Promise<void> {
    const write = async (): Promise<void> => {
      source.revoked.purge();
      const state: StateFile = {
        format: FORMAT,
        version: VERSION,
        clock: source.clock.forward(),
        monotonic: monotonicSeconds(),
        wallclock: Date.now() / 1000,
        revoked: source.revoked.toWire(),
      };
      await writeAtomically(this.path, `${JSON.stringify(state)}\n`);
    };
    const next = this.#writing.then(write, write);
    this.#writing = next.catch(() => undefined);
    return next;
  }
}

/** Parses and validates a state file's text; throws a `KqError` saying what is wrong. */
export function parseStateFile(text: string): StateFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new KqError(`the state file is not valid JSON (${(error as Error).message})`);
  }
  if (!value || typeof value !== 'object') throw new KqError('the state file does not hold an object');
  const state = value as Record<string, unknown>;
  if (state['format'] !== FORMAT) throw new KqError(`the state file is not a kq state file (format ${JSON.stringify(state['format'])})`);
  if (typeof state['version'] !== 'number' || state['version'] > VERSION) {
    throw new KqError(`the state file has version ${JSON.stringify(state['version'])}; this kq reads version ${VERSION}`);
  }
  for (const key of ['clock', 'monotonic', 'wallclock'] as const) {
    if (typeof state[key] !== 'number' || !Number.isFinite(state[key])) throw new KqError(`the state file's ${key} is not a number`);
  }
  const revoked = state['revoked'];
  if (!revoked || typeof revoked !== 'object' || Array.isArray(revoked)) throw new KqError("the state file's revoked set is not an object");
  const clean: LimitedSetWire = {};
  for (const [id, entry] of Object.entries(revoked as Record<string, unknown>)) {
    const timestamp = Array.isArray(entry) ? entry[0] : entry;
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw new KqError(`the state file's revoked entry ${JSON.stringify(id)} has no timestamp`);
    Object.defineProperty(clean, id, { value: [timestamp, id], enumerable: true, writable: true, configurable: true });
  }
  return {
    format: FORMAT,
    version: state['version'] as number,
    clock: state['clock'] as number,
    monotonic: state['monotonic'] as number,
    wallclock: state['wallclock'] as number,
    revoked: clean,
  };
}

/** Writes `text` to `path` so that a reader sees the old file or the new one, never a part: temp file, fsync, rename. */
async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.tmp-${process.pid}-${Date.now()}`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}

/**
 * The StateDB step (`--statedb`): loads the file before Mingle (so the clock and revokes are known before saying
 * hello), writes it every `statedbSyncInterval` seconds while running, and on stop.
 */
export class StateDbStep implements WorkerStep {
  readonly name = 'StateDB';
  readonly db: StateDb;
  readonly #context: ClusterContext;
  #timer: NodeJS.Timeout | undefined;
  #worker: WorkerHost | undefined;

  constructor(context: ClusterContext, path: string) {
    this.#context = context;
    this.db = new StateDb(path);
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker)) return;
    const target = { clock: worker.app.clock, revoked: worker.state.revoked };
    const loaded = await this.db.load(target, worker.log);
    if (loaded) worker.log.info(`statedb: loaded ${Object.keys(loaded.revoked).length} revoked task(s) and clock ${loaded.clock} from ${this.db.path}`);
    this.#worker = worker;
    const every = (this.#context.options.statedbSyncInterval ?? 30) * 1000;
    this.#timer = setInterval(() => {
      this.db.save(target).catch((error: unknown) => worker.log.error(`statedb: could not write ${this.db.path}: ${String(error)}`));
    }, every);
    this.#timer.unref();
  }

  async stop(worker: WorkerHost): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    try {
      await this.db.save({ clock: worker.app.clock, revoked: worker.state.revoked });
    } catch (error) {
      worker.log.error(`statedb: could not write ${this.db.path}: ${String(error)}`);
    }
  }
}
