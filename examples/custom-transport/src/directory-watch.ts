import { watch, type FSWatcher } from 'node:fs';

/**
 * Change notification for a few directories (inotify/FSEvents through `fs.watch`). Notifications can be missed
 * (a directory created after the watch started, a network file system, watcher limits), so every wait is also
 * bounded: callers re-check the directories at least every fallback interval.
 */
export class DirectoryWatch {
  readonly #watchers: FSWatcher[] = [];
  #changed = false;
  #wake: (() => void) | undefined;

  constructor(directories: Iterable<string>) {
    for (const directory of directories) {
      try {
        const watcher = watch(directory, { persistent: false }, () => this.#notify());
        // A watched directory that disappears (queue deleted) errors on some platforms: the poll covers it.
        watcher.on('error', () => undefined);
        this.#watchers.push(watcher);
      } catch {
        // Missing directory or no watcher available: the bounded poll covers it.
      }
    }
  }

  /** Resolves on the first change since the watch started, after `timeoutMs`, or when a signal aborts. */
  wait(timeoutMs: number, ...signals: Array<AbortSignal | undefined>): Promise<void> {
    if (this.#changed || signals.some((signal) => signal?.aborted)) return Promise.resolve();
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        for (const signal of signals) signal?.removeEventListener('abort', finish);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(finish, Math.max(0, timeoutMs));
      for (const signal of signals) signal?.addEventListener('abort', finish, { once: true });
      this.#wake = finish;
    });
  }

  close(): void {
    for (const watcher of this.#watchers.splice(0)) watcher.close();
    this.#wake?.();
  }

  #notify(): void {
    this.#changed = true;
    this.#wake?.();
  }
}
