import { MemoryBroker, MemoryResultBackend, MemoryTransport } from '@kq/core';
import { defineBeatLeaseSuite, defineChordJoinSuite, defineCycleRegisterSuite, defineDeadLetterSuite, defineDelayedCountSuite } from '@kq/test-harness';

// The memory transport's capabilities against the shared suites: transports naming one broker stand for processes
// of one app sharing it.
const BROKER = 'kq-memory-capabilities';
const create = (): MemoryTransport => new MemoryTransport({ broker: BROKER });

defineBeatLeaseSuite({ name: 'memory', create });
defineCycleRegisterSuite({ name: 'memory', create });
defineDeadLetterSuite({ name: 'memory', create, keepsReason: true });
// Result backends naming one store share its chord joins, as the processes of one app share a Redis.
defineChordJoinSuite({ name: 'memory', create: () => new MemoryResultBackend(BROKER) });
// Each transport a broker of its own: delayed messages belong to the broker, and the count must be the suite's alone.
let delayedBrokers = 0;
defineDelayedCountSuite({
  name: 'memory',
  create: () => new MemoryTransport({ broker: `${BROKER}-delayed-${delayedBrokers++}` }),
  byQueue: true,
  dueWithinMs: 2000,
  cleanup: async (transport) => MemoryBroker.reset((transport as MemoryTransport).broker.name),
});
