// @kq/redis — Kombu-compatible Redis transport on ioredis, with leases, fencing and delayed delivery.
import { claimPackageCopy, type TransportOptions } from '@kq/core';
import { normaliseOptions } from './redis-options';
import { RedisTransport } from './redis-transport';

// One copy of @kq/redis per process, or a loud error (see claimPackageCopy).
claimPackageCopy('@kq/redis', import.meta.url);

export { RedisTransport } from './redis-transport';
export { RedisResultBackend, createResultBackend, type RedisResultBackendOptions } from './redis-result-backend';
export { RedisChordStore } from './redis-chord-store';
export type { RedisTransportOptions, RedisTransportLogger } from './redis-options';
export { RedisStore, type RedisStoreStats } from './redis-store';
export type { RedisClaim } from './redis-claimer';
export { DeadLetterList, DEFAULT_DEAD_LETTER_MAX } from './dead-letter-list';
export { RedisFanoutBus } from './redis-fanout-bus';
export { KeyLayout, KOMBU_SEP, DEFAULT_KEY_NAMES, type KeyNames, type ListKey, type BindingMember } from './key-layout';
export { encodeEnvelope, decodeEnvelope, markRedelivered, envelopePriority, MalformedEnvelope } from '@kq/core';
export { InferredExchange } from './inferred-exchange';
export { parseBrokerUrl, type RedisEndpoint } from './broker-url';
export type { ClusterNodeAddress } from './redis-options';
export { keySlot, CLUSTER_SLOTS } from './cluster-slot';
export { quarantineRecord, type QuarantineEntry } from './quarantine';
export { pyJson, pyString } from '@kq/core';
export { RedisBeatLease } from './beat-lease';
export type { RedisLeaseHost } from './lease-host';
export { RedisCycleRegister } from './cycle-register';

/**
 * The factory core's transport registry calls for `redis://`, `rediss://`, `sentinel://` and `redis+cluster://` URLs. Options are
 * `RedisTransportOptions`; Kombu's snake_case transport option names are accepted too.
 */
export function createTransport(url: string, options: TransportOptions = {}): RedisTransport {
  return new RedisTransport(url, normaliseOptions(options));
}
