import type { AmqplibChannel } from './amqplib-loader';
import { closeQuietly } from './channel-slot';

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
