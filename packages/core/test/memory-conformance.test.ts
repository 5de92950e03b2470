import { MemoryBroker, MemoryTransport } from '@kq/core';
import { defineTransportSuite } from '@kq/test-harness';

// Every transport of one test shares this broker (a second transport stands for a second process); the suite
// isolates tests by name prefix and deletes what it declares.
const BROKER = 'kq-memory-conformance';

defineTransportSuite({
  name: 'memory',
  create: () => new MemoryTransport({ broker: BROKER, pollIntervalMs: 200 }),
  createWithPollInterval: (pollIntervalMs) => new MemoryTransport({ broker: BROKER, pollIntervalMs }),
  probe: {
    queueDepth: async (queue) => MemoryBroker.named(BROKER).size(queue),
  },
});
