import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { KqError } from '@kq/core';

/**
 * `--pidfile`, as Celery's: refuses to start while the file names a live process (a second worker of the same name
 * on the same host), replaces a stale one, and is removed on the way out.
 */
export class PidFile {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  /** The pid in the file, when it names a process that is alive. */
  livePid(): number | undefined {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return undefined;
    }
    const pid = Number(text.trim());
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
    try {
      process.kill(pid, 0);
      return pid;
    } catch (error) {
      // EPERM: alive, someone else's; ESRCH: gone
      return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
    }
  }

  acquire(pid = process.pid): void {
    const running = this.livePid();
    if (running !== undefined) {
      throw new KqError(`The pidfile ${this.path} names process ${running}, which is running: stop it first, or remove the file if it is not a kq worker.`);
    }
    mkdirSync(dirname(this.path), { recursive: true });
    writeFileSync(this.path, `${pid}\n`);
  }

  /** Removes the file if it still names this process. */
  release(pid = process.pid): void {
    try {
      if (Number(readFileSync(this.path, 'utf8').trim()) === pid) rmSync(this.path);
    } catch {
      // already gone
    }
  }
}
