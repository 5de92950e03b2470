// One benchmark at a time per machine: two runs would flush each other's Redis database and delete each other's
// queues mid-measurement (a smoke run started during a full run makes the full run's cases fail or lie).
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunLock {
  release(): void;
}

const LOCK_FILE = join(tmpdir(), 'kqbench.lock');

/** Takes the lock, or throws saying who holds it. A lock whose process is gone is taken over. */
export function acquireRunLock(what: string, file: string = LOCK_FILE): RunLock {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, started: new Date().toISOString(), what }));
      closeSync(fd);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        try {
          if ((JSON.parse(readFileSync(file, 'utf8')) as { pid?: number }).pid === process.pid) unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return { release };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(file);
      if (holder && isAlive(holder.pid)) {
        throw new Error(
          `Another benchmark is running (pid ${holder.pid}, ${holder.what}, since ${holder.started}); it flushes the same Redis ` +
            `database and purges the same queues. Wait for it to finish, or stop it (kill ${holder.pid}). Lock: ${file}`,
        );
      }
      try {
        unlinkSync(file); // its process is gone: a stale lock
      } catch {
        // someone else removed it first
      }
    }
  }
  throw new Error(`Could not take the benchmark lock ${file}.`);
}

function readHolder(file: string): { pid: number; started: string; what: string } | null {
  try {
    const holder = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; started?: unknown; what?: unknown };
    return typeof holder.pid === 'number' ? { pid: holder.pid, started: String(holder.started), what: String(holder.what) } : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
