import { ConnectionLost, KqError } from '@kq/core';
import type { Redis } from 'ioredis';
import { knownNodes } from './cluster-routing';
import type { ConnectionFactory, RedisClient } from './connection-factory';
import { tlsFailureFor } from './tls-guard';

/**
 * Opens the store's command connection (auto-pipelined when asked) and its subscriber, and checks the database can be
 * selected; `watch` sees the command connection before it connects. Fails with the reason worth naming (a TLS failure
 * before ioredis's "Connection is closed"), leaving nothing open.
 */
export async function openStoreClients(
  factory: ConnectionFactory,
  autoPipelining: boolean,
  watch: (commands: RedisClient) => void,
): Promise<{ commands: RedisClient; subscriber: Redis }> {
  const commands = factory.createClient('cmd', { enableAutoPipelining: autoPipelining });
  const subscriber = factory.createSubscriber('sub', {}, () => knownNodes(commands));
  watch(commands);
  try {
    await commands.connect();
    // On a cluster the commands reached it, so a subscriber's node that does not answer is passed over by its
    // reconnects (see createSubscriber) rather than failing the store.
    if (factory.cluster) void subscriber.connect().catch(() => undefined);
    else await subscriber.connect();
  } catch (error) {
    commands.disconnect();
    subscriber.disconnect();
    // ioredis rejects with "Connection is closed"; the TLS failure that closed it is the cause worth naming.
    const tlsFailure = tlsFailureFor(commands) ?? tlsFailureFor(subscriber);
    if (tlsFailure) throw tlsFailure;
    throw new ConnectionLost(`Cannot connect to Redis: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  // ioredis selects the database on its own and, when the server refuses the number, carries on in database 0:
  // every message would silently go there. Asked here, a refusal is an error that says what to change.
  if (factory.db !== 0) {
    try {
      await commands.select(factory.db);
    } catch (error) {
      commands.disconnect();
      subscriber.disconnect();
      throw new KqError(
        `Redis database ${factory.db} cannot be selected (${error instanceof Error ? error.message : String(error)}): use a ` +
          `number below the server's "databases" setting (16 by default), e.g. redis://127.0.0.1:6379/0.`,
        { cause: error },
      );
    }
  }
  return { commands, subscriber };
}

/** Closes a connection politely (QUIT, a second at most), then for sure. */
export async function quitClient(client: RedisClient | undefined): Promise<void> {
  if (!client) return;
  try {
    await Promise.race([client.quit(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  } catch {
    // already gone
  }
  client.disconnect();
}

