import type { Exchange } from '@kq/core';
import type { KeyLayout } from './key-layout';
import type { RedisStore } from './redis-store';

/**
 * What the beat lease and the cycle register use of the RedisTransport that makes them: its key layout, its store's
 * command connection and bindings, connecting, priority steps and exchange lookup. Declared here, not as the
 * transport, so they do not import the file that imports them.
 */
export interface RedisLeaseHost {
  readonly layout: KeyLayout;
  readonly redisStore: Pick<RedisStore, 'commands' | 'listBindings'>;
  connect(): Promise<void>;
  priorityStep(priority: unknown): number;
  findExchange(name: string): Promise<Exchange | undefined>;
}
