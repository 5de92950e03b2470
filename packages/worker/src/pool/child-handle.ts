import type { ChildMessage, ParentMessage } from './child-protocol';

/**
 * One executor of a child pool, as the parent talks to it: a worker thread or a child process. Messages cross
 * with structured clone (threads) or core's JSON codec over IPC (processes).
 */
export interface ChildHandle {
  /** The OS process id of a child process, or the thread id of a worker thread. */
  readonly id: number;
  /** Sends a message; throws EncodeError when it cannot cross (a function, a BigInt for JSON...). */
  send(message: ParentMessage): void;
  /** Ends the child at once (thread terminate / SIGKILL), even in the middle of a synchronous loop. */
  kill(): void;
  onMessage(listener: (message: ChildMessage) => void): void;
  /** Called once when the child is gone, with how it ended: `exitcode 1`, `signal 9 (SIGKILL)`. */
  onExit(listener: (how: string) => void): void;
  /** Something went wrong in the channel itself (an uncaught error in a thread, a closed IPC pipe). */
  onError(listener: (error: Error) => void): void;
}
