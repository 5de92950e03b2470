import type { AmqplibChannel } from './amqplib-loader';

/**
 * Closes an amqplib channel (or connection) without ever hanging: amqplib resolves `close()` only on the
 * broker's close-ok, which never comes if the connection dies meanwhile — the 'close' event does.
 */
export function closeQuietly(closable: { close(): Promise<void>; once(event: 'close', listener: () => void): unknown }): Promise<void> {
  return new Promise<void>((resolve) => {
    closable.once('close', () => resolve());
    closable.close().then(
      () => resolve(),
      () => resolve(),
    );
  });
}

/**
 * Closes a channel without waiting more than `ms` — amqplib may never settle the close of a channel whose socket
 * died silently (no 'close' event, no close-ok).
 */
export function closeWithin(channel: AmqplibChannel, ms = 1000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void closeQuietly(channel).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
