import { Worker } from 'node:worker_threads';
import { EncodeError } from '@kq/core';
import type { ChildHandle } from './child-handle';
import { POOL_CHILD_ENV, type ChildMessage, type ParentMessage } from './child-protocol';
import type { ChildScript } from './child-script';
import { restoreBuffers } from './restore-buffers';

/** A pool child in a worker thread: messages cross with structured clone; `kill()` terminates the thread. */
export class ThreadChild implements ChildHandle {
  readonly #worker: Worker;

  constructor(script: ChildScript) {
    this.#worker = new Worker(script.script, {
      workerData: { kqChildEntry: script.entry?.href },
      env: { ...process.env, [POOL_CHILD_ENV]: 'threads' },
      // The parent's flags may name loaders of its own (a test runner's); the child sets up what it needs.
      execArgv: [],
    });
  }

  get id(): number {
    return this.#worker.threadId;
  }

  send(message: ParentMessage): void {
    try {
      this.#worker.postMessage(message);
    } catch (error) {
      throw new EncodeError(`Cannot send this to a worker thread: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  kill(): void {
    void this.#worker.terminate();
  }

  onMessage(listener: (message: ChildMessage) => void): void {
    this.#worker.on('message', (message: ChildMessage) => {
      if (message.type === 'done' && message.value !== undefined) message.value = restoreBuffers(message.value);
      else if (message.type === 'publish') restoreBuffers(message.args);
      listener(message);
    });
  }

  onExit(listener: (how: string) => void): void {
    this.#worker.once('exit', (code) => listener(`exitcode ${code}`));
  }

  onError(listener: (error: Error) => void): void {
    this.#worker.on('error', listener);
  }
}
