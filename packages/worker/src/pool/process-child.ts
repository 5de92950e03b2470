import { fork, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { jsonCodec } from '@kq/core';
import type { ChildHandle } from './child-handle';
import { POOL_CHILD_ENV, type ChildMessage, type ParentMessage } from './child-protocol';
import type { ChildScript } from './child-script';

/**
 * A pool child in its own process: messages cross the IPC channel as text written by core's JSON codec (Dates,
 * Buffers survive); `kill()` sends SIGKILL.
 */
export class ProcessChild implements ChildHandle {
  readonly #child: ChildProcess;
  readonly #errorListeners: Array<(error: Error) => void> = [];

  constructor(script: ChildScript) {
    this.#child = fork(fileURLToPath(script.script), script.entry ? [script.entry.href] : [], {
      env: { ...process.env, [POOL_CHILD_ENV]: 'processes' },
      // The parent's flags may name loaders of its own (a test runner's); the child sets up what it needs.
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    // A send to a child that just died surfaces here; the exit handler deals with the child.
    this.#child.on('error', (error) => {
      for (const listener of this.#errorListeners) listener(error);
    });
  }

  get id(): number {
    return this.#child.pid ?? -1;
  }

  send(message: ParentMessage): void {
    const text = jsonCodec.encode(message).toString('utf8');
    if (!this.#child.connected) return; // gone: its exit is being handled
    this.#child.send(text);
  }

  kill(): void {
    this.#child.kill('SIGKILL');
  }

  onMessage(listener: (message: ChildMessage) => void): void {
    this.#child.on('message', (text) => {
      if (typeof text !== 'string') return;
      let message: ChildMessage;
      try {
        message = jsonCodec.decode(Buffer.from(text, 'utf8')) as ChildMessage;
      } catch (error) {
        for (const errorListener of this.#errorListeners) errorListener(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      listener(message);
    });
  }

  onExit(listener: (how: string) => void): void {
    this.#child.once('exit', (code, signal) => listener(signal ? `signal ${signalNumber(signal)} (${signal})` : `exitcode ${code ?? 0}`));
  }

  onError(listener: (error: Error) => void): void {
    this.#errorListeners.push(listener);
  }
}

function signalNumber(signal: NodeJS.Signals): number | string {
  return (constants.signals as Record<string, number | undefined>)[signal] ?? signal;
}
