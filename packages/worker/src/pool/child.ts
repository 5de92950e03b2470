// The entry of a pool child (a worker thread or a child process started by a `threads` / `processes` pool).
import { parentPort } from 'node:worker_threads';
import { jsonCodec } from '@kq/core';
import type { ChildMessage, ParentMessage } from './child-protocol';
import { ChildRuntime, type ParentPort } from './child-runtime';
import { restoreBuffers } from './restore-buffers';

function threadPort(port: NonNullable<typeof parentPort>): ParentPort {
  return {
    kind: 'threads',
    send: (message: ChildMessage) => port.postMessage(message),
    onMessage: (listener) =>
      port.on('message', (message: ParentMessage) => {
        if (message.type === 'run') restoreBuffers(message.request);
        listener(message);
      }),
    exit: (code) => process.exit(code), // in a worker thread this ends the thread only
  };
}

function processPort(): ParentPort {
  const send = process.send?.bind(process);
  if (!send) throw new Error('The kq pool child must be started by a kq worker (it talks to it over IPC).');
  // The worker died or closed the channel: nothing left to work for.
  process.on('disconnect', () => process.exit(process.exitCode ?? 0));
  // Ctrl+C reaches the whole process group and a service manager may signal every process: the worker decides when
  // its children stop (after their task in a warm shutdown), and they leave as soon as it is gone (disconnect).
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  let flushed: Promise<void> = Promise.resolve();
  return {
    kind: 'processes',
    send: (message: ChildMessage) => {
      const text = jsonCodec.encode(message).toString('utf8');
      if (!process.connected) return;
      flushed = new Promise((resolve) => send(text, undefined, {}, () => resolve()));
    },
    onMessage: (listener) =>
      process.on('message', (text) => {
        if (typeof text !== 'string') return;
        let message: ParentMessage;
        try {
          message = jsonCodec.decode(Buffer.from(text, 'utf8')) as ParentMessage;
        } catch (error) {
          console.error(`kq pool child ${process.pid}: ignored an undecodable message from the worker: ${String(error)}`);
          return;
        }
        listener(message);
      }),
    exit: (code) => {
      // The last reply (start-failed, the final log line) must reach the worker before the channel closes.
      process.exitCode = code;
      const timeout = new Promise((resolve) => setTimeout(resolve, 2000).unref());
      void Promise.race([flushed, timeout]).then(() => process.exit(code));
    },
  };
}

new ChildRuntime(parentPort ? threadPort(parentPort) : processPort()).listen();
