// @kq/core — the transport abstraction kq is built on (a port of Kombu).

export * from './errors';
export { TypedEmitter, type EventMap } from './typed-emitter';

export {
  BaseDelivery,
  type DecodeOptions,
  type Delivery,
  type DeliveryInfo,
  type DeliveryInit,
  type DeliveryMode,
  type DeliveryState,
  type Headers,
  type MessageProperties,
  type OutgoingMessage,
} from './message';
export { Exchange, stableJson, type ExchangeOptions, type ExchangeType } from './exchange';
export { Queue, type QueueOptions, type QueueType } from './queue';
export { Binding } from './binding';
export { routeMessage, topicMatches, headersMatch, kombuTopicPattern, type BindingRecord } from './routing';

export type {
  Channel,
  ChannelEvents,
  ConsumeOptions,
  ConsumerHandle,
  DelayedCount,
  FanoutDelivery,
  GetOptions,
  PriorityOrder,
  PublishOptions,
  QueueStats,
  Transport,
  TransportCapabilities,
  TransportDescription,
  TransportEvents,
} from './transport';

export { VirtualTransport, type VirtualTransportOptions } from './virtual/virtual-transport';
export { VirtualChannel } from './virtual/virtual-channel';
export type { FanoutBinding, VirtualChannelHost } from './virtual/virtual-channel-host';
export type {
  Claim,
  ClaimOptions,
  FanoutBus,
  FanoutPublishOptions,
  RestoreOptions,
  StoredMessage,
  VirtualStore,
  VirtualStoreFeatures,
} from './virtual/virtual-store';
export { DEFAULT_PRIORITY_STEPS, VIRTUAL_MAX_PRIORITY, priorityStep } from './virtual/priority-steps';

export { MemoryTransport, type MemoryTransportOptions } from './memory/memory-transport';
export { MemoryBroker } from './memory/memory-broker';
export { MemoryStore } from './memory/memory-store';
export { MemoryChannel } from './memory/memory-channel';
export { MemoryBeatLease } from './memory/memory-beat-lease';
export { MemoryCycleRegister } from './memory/memory-cycle-register';
export { MemoryDeadLetters, MEMORY_DEAD_LETTER_MAX } from './memory/memory-dead-letters';
export type {
  BeatLease,
  BeatLeaseListener,
  BeatLeaseOptions,
  BeatLeadership,
  CommitOutcome,
  TickCommit,
  TickPublication,
} from './leases/beat-lease';
export type { CycleAdvance, CycleBegin, CycleMarker, CycleRegister, CycleState } from './leases/cycle-register';

export {
  createTransport,
  registerTransport,
  knownSchemes,
  type TransportFactory,
  type TransportModule,
  type TransportOptions,
} from './transport-registry';
export { importOptionalPackage, isModuleNotFound, type ImportOptionalOptions } from './optional-package';
export { Connection, declareEntity, type ConnectionEvents, type ConnectionOptions, type Entity } from './connection';
export { backoffCountdown } from './exponential-backoff';
export { formatIsoDatetime, parseIsoDatetime, subMillisecondMicros, type IsoDatetimeParse } from './iso-datetime';
export { DEFAULT_RETRY_POLICY, retryAfterFailure, retryDelay, retryOver, type RetryHooks, type RetryPolicy } from './retry-policy';
export { Producer, type MessagePublishParams, type ProducerOptions, type PublishParams } from './producer';
export { DEFAULT_MAX_MESSAGE_SIZE, assertMessageSize } from './message-size';
export { Consumer, type ConsumerEvents, type ConsumerOptions } from './consumer';

export * from './serialization/index';
export { LamportClock, compareTimetuples, type TimeTuple } from './lamport-clock';
export { RoundRobinCycle } from './round-robin-cycle';
export { BoundedMap } from './bounded-map';
export { LimitedSet, type LimitedSetOptions, type LimitedSetWire } from './limited-set';
export { randomUuid } from './random-uuid';
export { sanitizeUrl } from './sanitize-url';
export { detectPackageManager, installCommand, type PackageManager } from './package-manager';
export { claimPackageCopy } from './package-copies';
export { brandClass, isBrandedInstance } from './class-brand';
export { processWide } from './process-wide';
export { hasDeadLetters, type DeadLetter, type DeadLetterBox, type DeadLetterCapable, type DeadLetterQuery } from './dead-letters';

export { pythonRepr, pythonTupleRepr, pythonSetRepr, pythonExceptionRepr, pythonStringRepr } from './python-repr';
export { comparePythonStrings } from './python-string-order';
export {
  pyJson,
  pyString,
  parseDocument,
  writeDocument,
  documentValue,
  member,
  setMember,
  TRUE_NODE,
  JsonSyntaxError,
  type JsonNode,
} from './python-json';
export {
  encodeEnvelope,
  decodeEnvelope,
  storedMessage,
  markRedelivered,
  envelopePriority,
  MalformedEnvelope,
  type DecodeContext,
} from './virtual/kombu-envelope';
export { Mailbox, type BroadcastOptions, type MailboxOptions, type MailboxReply } from './mailbox/mailbox';
export type { MailboxRequest } from './mailbox/mailbox-request';
export { MailboxNode, NO_REPLY, type MailboxHandler, type MailboxNodeEvents, type MailboxRequestContext, type NodeMailbox } from './mailbox/mailbox-node';
export { matchNode, type NodeMatcher } from './mailbox/node-matcher';
export { globToRegExp } from './glob-pattern';

export {
  EXCEPTION_STATES,
  READY_STATES,
  isExceptionInfo,
  isReadyState,
  type ExceptionInfo,
  type ResultMeta,
  type TaskState,
} from './results/result-meta';
export type { ResultBackend, StoreResultOptions, WaitForResultOptions } from './results/result-backend';
export { waitForResultMeta, type ResultWaiter } from './results/result-waiter';
export type { ChordJoin, ChordPart, GroupStore, ResultTuple } from './results/group-store';
export { MemoryResultBackend } from './results/memory-result-backend';
export { MemoryChordJoin } from './results/memory-chord-join';
export {
  createResultBackend,
  registerResultBackend,
  type ResultBackendFactory,
  type ResultBackendOptions,
} from './results/result-backend-registry';
export {
  KOMBU_TLS_QUERY_PARAMETERS,
  kombuSslFromQuery,
  resolveTlsOptions,
  tlsSettingsOf,
  type CertificateRequirement,
  type KombuSslOptions,
  type TlsOption,
  type TlsSettings,
} from './tls-settings';
export { tlsFailureOf } from './tls-failure';
