import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import type { Redis } from 'ioredis';

/** A MONITOR feed: `monitor` events of (time, args, source) as ioredis gives them, until `disconnect()`. */
export interface MonitorFeed {
  on(event: 'monitor', listener: (time: string, args: string[], source: string) => void): this;
  disconnect(): void;
}

/**
 * MONITOR of the server `redis` talks to, read from a plain socket. ioredis's `monitor()` fails with "Command queue
 * state error" when other test files' commands stream in with MONITOR's OK, before it has switched the connection to
 * monitoring; a socket of our own has no such state. Resolves once the feed has started.
 */
export async function monitorFeed(redis: Redis): Promise<MonitorFeed> {
  const { host, port } = redis.options;
  const socket = connect({ host: host ?? '127.0.0.1', port: port ?? 6379 });
  const feed = Object.assign(new EventEmitter(), { disconnect: (): void => void socket.destroy() });
  const started = new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    createInterface({ input: socket }).on('line', (line) => {
      if (line === '+OK') return resolve();
      // +1795787730.873396 [0 127.0.0.1:60404] "echo" "hello"
      const head = /^\+(\d+\.\d+) \[\d+ ([^\]]+)\] /.exec(line);
      if (!head) return;
      const args = [...line.slice(head[0].length).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1] ?? '');
      feed.emit('monitor', head[1], args, head[2]);
    });
  });
  socket.once('connect', () => socket.write('MONITOR\r\n'));
  await started;
  return feed;
}
