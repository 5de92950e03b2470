import { setTimeout as sleep } from 'node:timers/promises';
import type { AmqplibChannel } from './amqplib-loader';
import { isConnectionFailure, toKqError, type OperationContext } from './amqp-errors';
import type { ChannelSlot } from './channel-slot';

/**
 * Runs one RPC on a slot's channel. If it fails only because the channel or connection went away (not because of
 * anything it asked for), it is retried on a fresh channel until `recoveryTimeout` has passed; any other failure is
 * mapped to its kq error (`PreconditionFailed`, `QueueNotFound`, …). The slot replaces a channel the broker closed
 * on the next call, so a 406 costs only that operation.
 */
export async function runOnSlot<T>(
  slot: ChannelSlot,
  context: OperationContext,
  recoveryTimeout: number,
  run: (channel: AmqplibChannel) => Promise<T>,
  stillWanted: () => boolean = () => true,
): Promise<T> {
  const deadline = Date.now() + recoveryTimeout;
  for (;;) {
    let channel: AmqplibChannel;
    try {
      channel = await slot.acquire(Math.max(0, deadline - Date.now()));
    } catch (error) {
      throw toKqError(error, context);
    }
    try {
      return await run(channel);
    } catch (error) {
      if (!stillWanted() || !isConnectionFailure(error) || Date.now() >= deadline || slot.isClosed) throw toKqError(error, context);
      // Let the dead channel's 'close' reach the slot before asking it again.
      await sleep(20);
    }
  }
}
