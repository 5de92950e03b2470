// @kq/test-harness — the transport conformance suite.
export { brokerReachable, brokerUrls, pythonAvailable, pythonInterpreter, serverAvailable, type BrokerKind } from './broker-gate';
export { defineTransportSuite } from './define-transport-suite';
export {
  resolveSuiteSetup,
  type BrokerProbe,
  type SuiteSetup,
  type TransportSuiteOptions,
} from './suite-options';
export {
  DEFAULT_CHECK_TIMEOUT_MS,
  runCheck,
  runWithContext,
  type CheckFunction,
  type ConformanceCheck,
  type ConformanceGroup,
} from './conformance-check';
export { ConformanceContext, DEFAULT_WAIT_MS } from './conformance-context';
export { ConditionTimeout, quietPeriod, sleep, waitFor, type Description } from './wait-for';
export { expectError } from './expect-error';
export { DeliveryLog, recordingConsumer, type ArrivalPolicy } from './delivery-log';
export { expectQueueHolds } from './queue-contents';
export { startPeerConsumer, type PeerConsumer } from './peer';
export { bodyText, duplicatesOf, messageIds, seededRandom, shuffled, testMessage, type TestMessageExtras } from './test-messages';
export { QueueModel, type AllowedNext, type SettleAction } from './model/queue-model';
export * from './groups/index';
export {
  REDIS_CLUSTER_PORTS,
  RedisClusterProcesses,
  startRedisCluster,
  startRedisClusterOrSkip,
  type RedisClusterOptions,
} from './redis-cluster';
export { makeTestCertificates, type CertificateFiles, type TestCertificates } from './test-certificates';
export { PrivateRedisServer, type PrivateRedisServerOptions } from './private-redis-server';
export { freePort } from './free-port';
export { CuttingProxy, type CutMode } from './cutting-proxy';
export { type CapabilitySuiteOptions } from './capabilities/capability-suite-options';
export { defineBeatLeaseSuite, type BeatLeaseSuiteOptions } from './capabilities/beat-lease-suite';
export { defineCycleRegisterSuite, type CycleRegisterSuiteOptions } from './capabilities/cycle-register-suite';
export { defineDeadLetterSuite, type DeadLetterSuiteOptions } from './capabilities/dead-letter-suite';
export { defineChordJoinSuite, type ChordJoinSuiteOptions } from './capabilities/chord-join-suite';
export { defineDelayedCountSuite, type DelayedCountSuiteOptions } from './capabilities/delayed-count-suite';
